"""The "This model" tab of the positional-encoding lab (explorer/panels/positional_model.py): only the views of
the model's kind of positions are shown, with its note: the paper's sinusoids (or Marian's split layout, drawn), a
learned table once the engine sends it, RoPE's rotation angles and scores, and a note without a picture for a model
without positions."""

import math

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from explorer.panels.positional_model import ModelViews  # noqa: E402
from model.core.config import ModelConfig  # noqa: E402
from model.families.registry import FAMILIES  # noqa: E402
from model.io.snapshots import PositionalTables  # noqa: E402


def config(arch: str, **overrides) -> ModelConfig:
    return ModelConfig.preset("tiny", src_vocab_size=37, tgt_vocab_size=37, arch=arch, **overrides)


def run_of(m: ModelConfig):
    """A RunInfo of which the views read only the configuration."""
    from explorer.answers import RunInfo

    info = RunInfo.__new__(RunInfo)
    object.__setattr__(info, "model_config", m)
    return info


@pytest.fixture
def views(qtbot):
    v = ModelViews()
    page = v.page()  # the views' parent: kept until the test ends
    qtbot.addWidget(page)
    yield v


def shown(views) -> list:
    return [v for v in views.views() if not v.isHidden()]


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


def test_the_papers_sinusoids_are_said_and_marians_layout_drawn(views, english):
    views.draw(run_of(config("encoder_decoder", positional="sinusoidal")), None, 10)
    assert shown(views) == [] and "the paper's fixed sinusoids" in views.model_note.text()
    m = config("encoder_decoder", positional="sinusoidal", sinusoid_layout="split", scale_embedding=False)
    views.draw(run_of(m), None, 10)
    assert shown(views) == [views.learned]
    table, half = views.learned.values, m.d_model // 2
    assert table.shape == (10, m.d_model)
    for pos in (0, 3, 9):
        for i in (0, 1, half - 1):
            angle = pos / 10000 ** (2 * i / m.d_model)
            assert table[pos, i] == pytest.approx(math.sin(angle), abs=1e-6)  # the sines first
            assert table[pos, half + i] == pytest.approx(math.cos(angle), abs=1e-6)  # then the cosines
    assert "sines first, then cosines" in views.learned.title.text()
    assert "not scaled by √d_model" in views.model_note.text()


@pytest.mark.parametrize("arch", ["encoder_decoder", "decoder_only"])
def test_a_learned_table_is_drawn_once_the_engine_sends_it(views, english, arch):
    m = config(arch, positional="learned")
    views.draw(run_of(m), None, 12)
    assert shown(views) == [views.learned] and "learns one vector per position" in views.model_note.text()
    target = np.arange(m.max_len * m.d_model, dtype=float).reshape(m.max_len, m.d_model) / 1000
    views.draw(run_of(m), PositionalTables("learned", m.d_model, m.max_len, m.head_dim, 7, target, target), 12)
    assert np.array_equal(views.learned.values, target[:12])
    title = views.learned.title.text()
    assert "step 7" in title and ("(target side)" in title) == (arch == "encoder_decoder")


def test_ropes_angles_and_scores_are_its_rotations(views, english):
    m = config("decoder_only", positional="rope")
    n, head = 20, m.head_dim
    views.draw(run_of(m), None, n)
    omega = [10000 ** (-2 * i / head) for i in range(head // 2)]
    angles = views.rope_angles.values
    for pos in (1, 7, 19):
        for i in (0, head // 2 - 1):
            assert angles[pos, i] == pytest.approx((pos * omega[i]) % (2 * math.pi))
    offsets, scores = views.rope_scores.series["q·k"]
    assert list(offsets) == list(range(-n + 1, n))
    assert scores[n - 1] == pytest.approx(head)  # offset 0: each of the head // 2 pairs adds 2 cos 0
    assert scores[n + 4] == pytest.approx(sum(2 * math.cos(5 * w) for w in omega))
