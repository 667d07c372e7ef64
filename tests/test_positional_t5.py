"""T5's relative-position buckets in the positional-encoding lab (explorer/panels/positional_t5.py): the buckets
drawn for the stacks the family has, each head's learned bias once the engine sends it, and the note that names each
stack's last bucket."""

import numpy as np
import pytest
import torch

pytest.importorskip("pytestqt")

from explorer.panels.positional_t5 import T5Views, last_bucket_start, t5_note  # noqa: E402
from model.core.config import ModelConfig  # noqa: E402
from model.families.registry import DECODER_ONLY, ENCODER_DECODER, ENCODER_ONLY, FAMILIES  # noqa: E402
from model.families.t5 import t5_buckets  # noqa: E402
from model.io.snapshots import PositionalTables  # noqa: E402


def config(arch: str, **overrides) -> ModelConfig:
    return ModelConfig.preset("tiny", src_vocab_size=37, tgt_vocab_size=37, arch=arch, **overrides)


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


@pytest.mark.parametrize("arch", ["encoder_decoder", "decoder_only"])
def test_each_heads_bias_is_its_table_looked_up_by_the_bucket_of_the_offset(qtbot, english, arch):
    t5 = T5Views()
    for view in t5.views():
        qtbot.addWidget(view)
    m = config(arch, positional="t5_relative")
    heads = m.n_heads
    encoder = np.arange(m.t5_buckets * heads, dtype=float).reshape(m.t5_buckets, heads)
    decoder = -encoder
    has_encoder, has_decoder = ("encoder" in m.family.stacks), ("decoder" in m.family.stacks)
    tables = PositionalTables(
        "t5_relative",
        m.d_model,
        m.max_len,
        m.head_dim,
        12,
        t5_encoder=encoder if has_encoder else None,
        t5_decoder=decoder if has_decoder else None,
    )
    t5.draw(m, tables, 20)
    both = arch == "encoder_decoder"  # the first stack's bias: the encoder's, or the decoder's looking back
    assert list(t5.t5_bias.series) == [f"head {h + 1}" for h in range(heads)]
    for h in (0, heads - 1):
        x, y = t5.t5_bias.series[f"head {h + 1}"]
        assert x.min() < 0 and (x.max() > 0) == both  # keys after the query: the encoder's only
        bucket = t5_buckets(torch.as_tensor(x), both, m.t5_buckets, m.t5_max_distance).numpy()
        assert np.array_equal(y, (encoder if both else decoder)[bucket, h])
    assert "step 12" in t5.t5_bias.title.text()
