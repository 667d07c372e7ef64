"""The positional-encoding lab's pieces: its settings, the paper's sinusoids and the shift by k, the model's own
positions by kind, and T5's buckets by the family's stacks (what the whole panel shows is tested with the families
in test_families_inspecting, test_teaching_texts and test_texts_true)."""

import numpy as np
import pytest
import torch

pytest.importorskip("pytestqt")

from explorer.panels.positional_controls import LabControls  # noqa: E402
from explorer.panels.positional_model import ModelViews  # noqa: E402
from explorer.panels.positional_paper import PaperViews  # noqa: E402
from explorer.panels.positional_t5 import T5Views, last_bucket_start, t5_note  # noqa: E402
from model.core.config import ModelConfig  # noqa: E402
from model.core.positional import sinusoidal_table  # noqa: E402
from model.families.registry import DECODER_ONLY, ENCODER_DECODER, ENCODER_ONLY, FAMILIES  # noqa: E402
from model.families.t5 import t5_buckets  # noqa: E402


def config(arch: str, **overrides) -> ModelConfig:
    return ModelConfig.preset("tiny", src_vocab_size=37, tgt_vocab_size=37, arch=arch, **overrides)


def test_the_settings_keep_the_typed_dimensions_below_d_model_and_follow_a_models_width(qtbot):
    changes = []
    controls = LabControls(lambda: changes.append(1))
    qtbot.addWidget(controls.d_model)
    controls.d_model.setValue(16)
    controls.dims.setText("3, 15 16 99 x 0")
    assert controls.chosen_dims() == [3, 15, 0]
    controls.dims.setText("20 30")
    assert controls.chosen_dims() == [0, 1]  # none below d_model: the first pair
    changes.clear()
    controls.follow_model(37)  # an odd width: the sinusoids take the next even one
    assert controls.d_model.value() == 38 and controls.even_width() == 38 and not changes
    assert controls.dims.text() == "0 4 8 18"
    controls.d_model.setValue(41)
    assert controls.even_width() == 42 and changes


def test_the_shift_tab_shows_pe_of_pos_plus_k_as_m_k_times_pe_of_pos(qtbot, english):
    paper = PaperViews()
    for view in paper.views():
        qtbot.addWidget(view)
    paper.draw(16, 30, [0, 5], 3, 7)
    target, moved = (paper.shift_plot.series[name][1] for name in ("PE(pos + k)", "M_k · PE(pos)"))
    assert moved == pytest.approx(sinusoidal_table(11, 16).numpy()[10], abs=1e-6)
    assert moved == pytest.approx(target, abs=1e-6)
    assert list(paper.curves.series) == ["dim 0", "dim 5"]
    assert paper.shift_matrix.values.shape == (16, 16) and "M_k shown" not in paper.shift_note.text()
    paper.draw(40, 30, [0], -9, 5)  # no PE(pos + k) before position 0; M_k's first 16 rows shown
    assert list(paper.shift_plot.series) == ["M_k · PE(pos)"] and paper.shift_matrix.values.shape == (16, 16)
    assert "M_k shown for the first 16 dimensions" in paper.shift_note.text()


def test_the_model_tab_shows_the_views_of_the_models_kind_only(qtbot, english):
    from explorer.answers import RunInfo

    views = ModelViews()
    page = views.page()
    qtbot.addWidget(page)
    views.draw(None, None, 50)
    assert views.model_note.text() == "No model loaded."
    assert all(v.isHidden() for v in views.views())
    info = RunInfo.__new__(RunInfo)  # only its configuration is read
    object.__setattr__(info, "model_config", config("decoder_only", positional="rope"))
    views.draw(info, None, 50)
    shown = [v for v in views.views() if not v.isHidden()]
    m = info.model_config
    assert shown == [views.rope_angles, views.rope_scores] and f"head size {m.head_dim}" in views.model_note.text()
    assert views.rope_angles.values.shape == (50, m.head_dim // 2)  # a column per pair of a head's dimensions


@pytest.mark.parametrize("arch", FAMILIES)
def test_a_model_without_positions_gets_a_note_and_no_picture(qtbot, english, arch):
    from explorer.answers import RunInfo
    from model.io.snapshots import PositionalTables

    views = ModelViews()
    page = views.page()
    qtbot.addWidget(page)
    info = RunInfo.__new__(RunInfo)  # only its configuration is read
    object.__setattr__(info, "model_config", config(arch, positional="none"))
    m = info.model_config
    views.draw(info, PositionalTables("none", m.d_model, m.max_len, m.head_dim, 3), 50)
    assert all(v.isHidden() for v in views.views())
    assert views.model_note.text().startswith("This model has no positional encoding")


@pytest.mark.parametrize("arch", FAMILIES)
def test_t5s_buckets_are_drawn_for_the_stacks_the_family_has(qtbot, english, arch):
    t5 = T5Views()
    for view in t5.views():
        qtbot.addWidget(view)
    m = config(arch, positional="t5_relative")
    spec = FAMILIES[arch]
    note = t5.draw(m, None, 20)
    curves = {"encoder": "encoder (both ways)", "decoder": "decoder (looks back)"}
    assert list(t5.t5_plot.series) == [curves[stack] for stack in spec.stacks]
    both = spec.stacks[0] == "encoder"  # the matrix: the first stack's buckets
    pos = torch.arange(20)
    expected = t5_buckets(pos[None, :] - pos[:, None], both, m.t5_buckets, m.t5_max_distance).numpy()
    assert np.array_equal(t5.t5_matrix.values, expected) and t5.t5_matrix.hatched().any() != both
    assert not t5.t5_bias.series  # the weights have not arrived
    assert ("encoder's buckets" in note) == ("encoder" in spec.stacks)
    assert ("decoder's all look back" in note) == ("decoder" in spec.stacks)
    assert note == t5_note(spec, m.t5_buckets, m.t5_max_distance)


def test_the_t5_note_names_each_stacks_last_bucket(english):
    assert last_bucket_start(True, 32, 128) == 91 and last_bucket_start(False, 32, 128) == 113
    both = t5_note(ENCODER_DECODER, 32, 128)
    assert "from 91 on" in both and "from 113 on" in both
    assert "from 113 on" in t5_note(DECODER_ONLY, 32, 128) and "from 91" not in t5_note(DECODER_ONLY, 32, 128)
    assert "from 91 on" in t5_note(ENCODER_ONLY, 32, 128) and "from 113" not in t5_note(ENCODER_ONLY, 32, 128)
