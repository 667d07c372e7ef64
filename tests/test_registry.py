"""The family registry agrees with what the model builds: the attention kinds its maps hold, the inputs it takes,
the objective it is trained with, its decoding modes, and parameter groups that cover every parameter once."""

import itertools

import pytest
import torch

from model.core.config import ARCHS, ModelConfig
from model.core.transformer import Transformer
from model.data.batching import Batch
from model.data.text_batching import EncodedTexts, LMBatch, MLMBatch, text_batches_in_order
from model.families.parts import PARTS
from model.families.registry import (
    FAMILIES,
    GROUP_LABELS,
    MOE,
    OPTIONS,
    T5_BIAS,
    family_of,
    help_keys,
    options_of,
    parameter_group,
    parameter_groups,
    scores,
)
from model.io.checkpoint import weight_shapes

V = 24
# every family with each option alone and both together, and the settings that add or remove parameter groups
VARIANTS = [
    dict(positional="sinusoidal"),
    dict(positional="learned", norm="pre"),
    dict(positional="t5_relative"),
    dict(positional="rope", n_experts=3, experts_top_k=2),
    dict(positional="t5_relative", n_experts=2, norm="pre", tie_embeddings=True),
    dict(positional="learned", embed_norm=True),
]
CASES = [
    (arch, variant)
    for arch, variant in itertools.product(FAMILIES, VARIANTS)
    # a classification head belongs to the encoder-only family; try it there too
] + [("encoder_only", dict(positional="learned", n_classes=2, embed_norm=True))]


def config(arch: str, **options) -> ModelConfig:
    one = FAMILIES[arch].single_stream
    sizes = (
        dict(src_vocab_size=0, tgt_vocab_size=0, vocab_size=V) if one else dict(src_vocab_size=V, tgt_vocab_size=V + 2)
    )
    shape = dict(d_model=16, n_heads=2, n_encoder_layers=2, n_decoder_layers=3, d_ff=32, dropout=0.0, max_len=32)
    return ModelConfig(arch=arch, **sizes, **shape, **options)


def model_of(cfg: ModelConfig) -> Transformer:
    torch.manual_seed(0)
    return Transformer(cfg).eval()


def inputs_of(cfg: ModelConfig, length: int = 6) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(1)
    return tuple(torch.randint(3, V, (2, length), generator=g) for _ in family_of(cfg).inputs)


def test_every_family_has_a_spec_and_parts():
    assert tuple(FAMILIES) == ARCHS
    assert set(PARTS) == set(FAMILIES)
    assert all(PARTS[arch].spec is spec for arch, spec in FAMILIES.items())


@pytest.mark.parametrize("arch, options", CASES)
def test_the_attention_kinds_are_the_spec_s(arch, options):
    cfg = config(arch, **options)
    model, spec = model_of(cfg), family_of(cfg)
    with torch.no_grad():
        _, maps = model(*inputs_of(cfg), return_attention=True)
    layers = {"encoder": cfg.n_encoder_layers, "decoder_self": cfg.n_decoder_layers, "cross": cfg.n_decoder_layers}
    for kind in ("encoder", "decoder_self", "cross"):
        found = getattr(maps, kind)
        assert len(found) == (layers[kind] if kind in spec.attention else 0), kind
    experts = MOE in options_of(cfg)
    assert bool(maps.encoder_routing) == (experts and "encoder" in spec.stacks)
    assert bool(maps.decoder_routing) == (experts and "decoder" in spec.stacks)


@pytest.mark.parametrize("arch", FAMILIES)
def test_the_parameter_breakdown_is_keyed_by_the_spec_s_group_ids(arch):
    """The engine sends counts by group id, in the registry's order; only the window turns an id into a label."""
    options = dict(n_classes=2, embed_norm=True) if arch == "encoder_only" else {}
    cfg = config(arch, positional="learned", norm="pre", **options)
    breakdown = model_of(cfg).parameter_breakdown()
    assert tuple(breakdown) == parameter_groups(cfg)
    assert set(breakdown) <= set(FAMILIES[arch].parameter_groups)
    assert all(breakdown.values())


@pytest.mark.parametrize("arch, options", CASES)
def test_parameter_groups_cover_every_parameter_exactly_once(arch, options):
    cfg = config(arch, **options)
    model = model_of(cfg)
    per_group: dict[str, int] = {}
    for name, p in model.named_parameters():  # a tied matrix appears once
        group = parameter_group(name)
        per_group[group] = per_group.get(group, 0) + p.numel()
    assert tuple(g for g in GROUP_LABELS if g in per_group) == parameter_groups(cfg)
    assert sum(per_group.values()) == model.num_parameters()
    possible = set(family_of(cfg).parameter_groups).union(*(o.parameter_groups for o in OPTIONS))
    assert set(per_group) <= possible
    # the breakdown the window shows is these groups, by id and in the registry's order (the window labels them)
    assert model.parameter_breakdown() == {g: per_group[g] for g in parameter_groups(cfg)}
    assert tuple(model.parameter_breakdown()) == parameter_groups(cfg)


@pytest.mark.parametrize("arch, options", CASES)
def test_the_checkpoint_shapes_follow_the_spec(arch, options):
    cfg = config(arch, **options)
    assert {k: tuple(v.shape) for k, v in model_of(cfg).state_dict().items()} == weight_shapes(cfg)


@pytest.mark.parametrize("arch", FAMILIES)
def test_the_model_takes_the_inputs_the_spec_names(arch):
    cfg = config(arch)
    model, spec = model_of(cfg), family_of(cfg)
    ids = inputs_of(cfg)
    assert model(*ids).shape == (2, ids[-1].shape[1], cfg.tgt_vocab_size)
    with pytest.raises(TypeError, match=f"takes {len(spec.inputs)} tensor"):
        model(*ids, ids[0])


@pytest.mark.parametrize("arch", FAMILIES)
def test_the_objective_is_what_the_model_can_learn(arch):
    """A left-to-right objective ("translation", "lm") needs a model whose outputs never look ahead; a masked one
    ("mlm") needs one that looks both ways."""
    cfg = config(arch)
    model, spec = model_of(cfg), family_of(cfg)
    ids = inputs_of(cfg)
    later = [t.clone() for t in ids]
    later[-1][:, -1] = (later[-1][:, -1] + 1 - 3) % (V - 3) + 3  # another last token
    with torch.no_grad():
        before, after = model(*ids)[:, :-1], model(*later)[:, :-1]
    looks_ahead = not torch.allclose(before, after, atol=1e-6)
    assert looks_ahead == (spec.objective == "mlm")


@pytest.mark.parametrize("arch", ["decoder_only", "encoder_only"])
def test_text_families_batch_for_their_objective(arch):
    spec = FAMILIES[arch]
    assert spec.data == "text" and spec.single_stream
    data = EncodedTexts([[5, 6, 7, 8], [9, 10, 11]], 0)
    batch = text_batches_in_order(data, 2, spec.objective, vocab_size=V, mask_id=4, first_regular_id=5)[0]
    assert isinstance(batch, {"lm": LMBatch, "mlm": MLMBatch}[spec.objective])
    assert FAMILIES["encoder_decoder"].data == "pairs" and FAMILIES["encoder_decoder"].objective == "translation"
    assert Batch  # the pairs' batch (model.data.batching)


@pytest.mark.parametrize("arch", FAMILIES)
def test_the_decoding_modes_are_the_model_s(arch):
    cfg = config(arch)
    model, spec = model_of(cfg), family_of(cfg)
    if "generate" in spec.decoding:
        state = model.start_generation(1, 4)
        logits, self_w, cross_w = model.decode_step(torch.tensor([5]), state, need_weights=True)
        assert logits.shape == (1, cfg.tgt_vocab_size) and len(self_w) == cfg.n_decoder_layers and not cross_w
    else:
        with pytest.raises(ValueError, match="decoder-only"):
            model.start_generation(1, 4)
    if "translate" in spec.decoding:
        src = inputs_of(cfg)[0]
        memory = model.encode(src)
        state = model.start_decoding(memory, (src != cfg.pad_id)[:, None, None, :], 2, 4)
        _, _, cross_w = model.decode_step(torch.tensor([cfg.bos_id] * 2), state, need_weights=True)
        assert len(cross_w) == cfg.n_decoder_layers


def test_options_apply_by_configuration():
    assert options_of(config("decoder_only")) == ()
    assert options_of(config("encoder_only", n_experts=2, positional="t5_relative")) == (MOE, T5_BIAS)
    assert scores(config("decoder_only", n_experts=2)) == ("perplexity", "aux_loss", "expert_load")
    assert help_keys(config("encoder_only", positional="t5_relative"), "map") == ("map_encoder_only", "map_t5")


def test_the_help_keys_name_written_topics():
    pytest.importorskip("PySide6")
    from explorer.help_families import FAMILY_HELP

    keys = [k for spec in FAMILIES.values() for k in spec.help_keys.values()]
    keys += [k for option in OPTIONS for k in option.help_keys.values()]
    family_topics = [k for k in keys if k.startswith(("training_", "map_"))]
    assert family_topics and all(k in FAMILY_HELP for k in family_topics)
