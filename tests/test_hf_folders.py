"""Models read from Hugging Face folders compute what ``transformers``' own implementation computes.

Small randomly initialised MarianMTModel, GPT2LMHeadModel and BertForMaskedLM models (odd sizes, Marian with
``swish`` as the real opus-mt configs, GPT-2 with its tanh GELU, BERT with erf GELU) are saved with
``save_pretrained`` (safetensors and the pickled ``.bin``), read with :mod:`model.hf.folders`, and compared:
logits on padded batches, every layer's and head's attention weights, greedy output token for token. Every
weight (LayerNorms and output biases included) is perturbed away from its initial value first, so that a
weight read into the wrong place changes the numbers.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

from model.core.transformer import Transformer  # noqa: E402
from model.decoding.search import generate, greedy_decode  # noqa: E402
from model.hf.folders import HFImportError, load_into, read_config, read_model, read_weights  # noqa: E402

MARIAN = dict(
    vocab_size=97,
    d_model=24,
    encoder_layers=2,
    decoder_layers=2,
    encoder_attention_heads=3,
    decoder_attention_heads=3,
    encoder_ffn_dim=40,
    decoder_ffn_dim=40,
    activation_function="swish",
    scale_embedding=True,
    pad_token_id=96,
    eos_token_id=0,
    decoder_start_token_id=96,
    forced_eos_token_id=None,
    max_position_embeddings=64,
)
GPT2 = dict(vocab_size=101, n_embd=24, n_layer=2, n_head=3, n_positions=64, bos_token_id=100, eos_token_id=100)
BERT = dict(
    vocab_size=103,
    hidden_size=24,
    num_hidden_layers=2,
    num_attention_heads=3,
    intermediate_size=40,
    max_position_embeddings=64,
    pad_token_id=0,
)
BERT_SPECIALS = {"pad": 0, "bos": 101, "eos": 102}
ROOT = Path(__file__).resolve().parents[1]


def _perturb(model: torch.nn.Module, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "embed_positions" not in name:  # Marian's sinusoid table is fixed (and recomputed, not saved)
                p.add_(torch.randn(p.shape, generator=g) * 0.2)
        if hasattr(model, "final_logits_bias"):
            model.final_logits_bias.normal_(0, 0.5, generator=g)


def _save(model: torch.nn.Module, root: Path, name: str) -> tuple[Path, Path]:
    """The model saved twice: with ``save_pretrained`` (safetensors), and as the older ``pytorch_model.bin``
    (a pickled state dict, every tied copy and fixed table included, as older Hub uploads are)."""
    safe, pickled = root / f"{name}-safetensors", root / f"{name}-bin"
    model.save_pretrained(safe)
    pickled.mkdir()
    (pickled / "config.json").write_text((safe / "config.json").read_text())
    torch.save(model.state_dict(), pickled / "pytorch_model.bin")
    assert not (pickled / "model.safetensors").exists()
    return safe, pickled


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf")
    torch.manual_seed(0)
    made = {}
    for name, cls, cfg_cls, kwargs in (
        ("marian", transformers.MarianMTModel, transformers.MarianConfig, MARIAN),
        ("gpt2", transformers.GPT2LMHeadModel, transformers.GPT2Config, GPT2),
        ("bert", transformers.BertForMaskedLM, transformers.BertConfig, BERT),
    ):
        model = cls(cfg_cls(**kwargs, attn_implementation="eager")).eval()
        _perturb(model, len(made))
        made[name] = (model, *_save(model, root, name))
    return made


def _ours(folder: Path, specials: dict[str, int] | None = None) -> Transformer:
    config = read_config(folder)
    cfg, weights = read_model(folder, config, specials or BERT_SPECIALS)
    model = Transformer(cfg)
    load_into(model, weights, str(folder))
    assert model.generator.weight is model.tgt_embed.weight  # still tied
    return model.eval()


def _padded(rows: list[list[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(map(len, rows))
    ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows])
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
    return ids, mask


def _random_rows(vocab: range, lengths: list[int], seed: int) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(vocab.start, vocab.stop, (n,), generator=g).tolist() for n in lengths]


def _close_on_real(ours: torch.Tensor, theirs: torch.Tensor, mask: torch.Tensor, atol: float) -> None:
    real = mask.bool()
    assert ours[real].shape == theirs[real].shape
    torch.testing.assert_close(ours[real], theirs[real], atol=atol, rtol=0)


def _close_maps(ours: list[torch.Tensor], theirs: tuple[torch.Tensor, ...], query_mask: torch.Tensor) -> None:
    assert len(ours) == len(theirs)
    real = query_mask.bool()
    for a, b in zip(ours, theirs):  # [B, H, Lq, Lk], compared at real query rows
        assert a.shape == b.shape
        torch.testing.assert_close(a.permute(0, 2, 1, 3)[real], b.permute(0, 2, 1, 3)[real], atol=1e-5, rtol=0)


@pytest.mark.parametrize("fmt", [1, 2], ids=["safetensors", "bin"])
def test_marian_logits_and_attention_match_transformers(folders, fmt):
    reference, folder = folders["marian"][0], folders["marian"][fmt]
    ours = _ours(folder)
    src, src_mask = _padded(_random_rows(range(1, 96), [7, 4, 9], 1), 96)
    tgt_rows = [[96, *r] for r in _random_rows(range(0, 96), [5, 8, 2], 2)]
    tgt, tgt_mask = _padded(tgt_rows, 96)
    with torch.no_grad():
        theirs = reference(
            input_ids=src,
            attention_mask=src_mask,
            decoder_input_ids=tgt,
            decoder_attention_mask=tgt_mask,
            output_attentions=True,
        )
        logits, maps = ours(src, tgt, return_attention=True)
    _close_on_real(logits, theirs.logits, tgt_mask, 1e-4)
    _close_maps(maps.encoder, theirs.encoder_attentions, src_mask)
    _close_maps(maps.decoder_self, theirs.decoder_attentions, tgt_mask)
    _close_maps(maps.cross, theirs.cross_attentions, tgt_mask)


def test_marian_greedy_output_equals_generate(folders):
    reference, folder = folders["marian"][0], folders["marian"][1]
    ours = _ours(folder)
    rows = _random_rows(range(1, 96), [6, 9, 3], 3)
    src, mask = _padded([r + [0] for r in rows], 96)  # sources end with </s>, as the tokenizer makes them
    budget = 12
    with torch.no_grad():
        theirs = reference.generate(
            input_ids=src,
            attention_mask=mask,
            do_sample=False,
            num_beams=1,
            max_new_tokens=budget,
            bad_words_ids=[[96]],
            forced_eos_token_id=None,
        )
    decoded = greedy_decode(ours, src, budget)
    for row, out in zip(theirs.tolist(), decoded):
        expected = row[1:]  # after the start token; finished rows are padded
        if 0 in expected:
            expected = expected[: expected.index(0) + 1]
        assert out == expected


@pytest.mark.parametrize("fmt", [1, 2], ids=["safetensors", "bin"])
def test_gpt2_logits_and_attention_match_transformers(folders, fmt):
    reference, folder = folders["gpt2"][0], folders["gpt2"][fmt]
    ours = _ours(folder)
    ids, mask = _padded(_random_rows(range(0, 101), [9, 3, 6], 4), 100)
    with torch.no_grad():
        theirs = reference(input_ids=ids, attention_mask=mask, output_attentions=True)
        logits, maps = ours(ids, return_attention=True)
    _close_on_real(logits, theirs.logits, mask, 1e-4)
    _close_maps(maps.decoder_self, theirs.attentions, mask)


def test_gpt2_greedy_output_equals_generate(folders):
    reference, folder = folders["gpt2"][0], folders["gpt2"][1]
    ours = _ours(folder)
    for prompt in _random_rows(range(0, 100), [4, 1, 7], 5):
        with torch.no_grad():  # this engine starts a text with <|endoftext|>: give the reference the same
            theirs = reference.generate(
                input_ids=torch.tensor([[100, *prompt]]),
                do_sample=False,
                num_beams=1,
                max_new_tokens=15,
                pad_token_id=100,
            )
        assert generate(ours, prompt, 15) == theirs[0, len(prompt) + 1 :].tolist()


@pytest.mark.parametrize("fmt", [1, 2], ids=["safetensors", "bin"])
def test_bert_logits_and_attention_match_transformers(folders, fmt):
    reference, folder = folders["bert"][0], folders["bert"][fmt]
    ours = _ours(folder)
    ids, mask = _padded([[101, *r, 102] for r in _random_rows(range(1, 100), [6, 2, 9], 6)], 0)
    segments = (torch.arange(ids.shape[1]) > 3).long().expand_as(ids) * mask
    with torch.no_grad():
        theirs = reference(input_ids=ids, attention_mask=mask, token_type_ids=segments, output_attentions=True)
        logits, maps = ours(ids, segments=segments, return_attention=True)
    _close_on_real(logits, theirs.logits, mask, 1e-4)
    _close_maps(maps.encoder, theirs.attentions, mask)


def test_both_formats_give_the_same_weights(folders):
    for name in ("marian", "gpt2", "bert"):
        _, safe, pickled = folders[name]
        a, b = read_weights(safe), read_weights(pickled)
        shared = set(a) & set(b)
        assert shared and all(torch.equal(a[k], b[k]) for k in shared)


class _Hostile:
    def __reduce__(self):
        return (Path.touch, (Path(MARKER),))


MARKER = ""


def test_a_bin_file_with_python_objects_is_refused_and_nothing_runs(folders, tmp_path):
    global MARKER
    folder = tmp_path / "hostile"
    folder.mkdir()
    (folder / "config.json").write_text((folders["gpt2"][2] / "config.json").read_text())
    MARKER = str(tmp_path / "ran")
    with open(folder / "pytorch_model.bin", "wb") as f:
        torch.save({"wte.weight": torch.zeros(2, 2), "payload": _Hostile()}, f, pickle_module=pickle)
    with pytest.raises(HFImportError, match="refused"):
        read_weights(folder)
    assert not Path(MARKER).exists()


def test_unsupported_model_type_and_non_model_folder_are_refused(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "t5", "architectures": ["T5Model"]}))
    with pytest.raises(HFImportError, match=r"model_type 't5' is not supported.*Marian.*GPT-2.*BERT"):
        read_config(tmp_path)
    empty = tmp_path / "photos"
    empty.mkdir()
    (empty / "cat.jpg").write_bytes(b"")
    with pytest.raises(HFImportError, match=r"not a model folder \(no config.json; found cat.jpg\)"):
        read_config(empty)
    (tmp_path / "config.json").write_text(
        json.dumps({"model_type": "bert", "architectures": ["BertForTokenClassification"]})
    )
    with pytest.raises(HFImportError, match="BertForTokenClassification is not supported"):
        read_config(tmp_path)


def test_a_missing_or_misshapen_weight_is_named(folders, tmp_path):
    from safetensors.torch import load_file, save_file

    source = folders["gpt2"][1]
    config = json.loads((source / "config.json").read_text())
    tensors = load_file(source / "model.safetensors")
    missing = tmp_path / "missing"
    missing.mkdir()
    (missing / "config.json").write_text(json.dumps(config))
    save_file(
        {k: v for k, v in tensors.items() if k != "transformer.h.1.mlp.c_fc.weight"}, missing / "model.safetensors"
    )
    with pytest.raises(HFImportError, match=r"h\.1\.mlp\.c_fc\.weight is missing"):
        _ours(missing)
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    (wrong / "config.json").write_text(json.dumps({**config, "n_inner": 50}))
    save_file(tensors, wrong / "model.safetensors")
    with pytest.raises(HFImportError, match=r"h\.0\.mlp\.c_fc\.weight has shape \[96, 24\].*implies \[50, 24\]"):
        _ours(wrong)


def test_a_misshapen_attention_weight_of_marian_is_named_before_anything_is_read(folders, tmp_path):
    """The query, key and value weights become one matrix: their planned shapes are joined without torch.cat (whose
    first call on meta tensors imports torch._dynamo, seconds of Python the window's thread would wait behind)."""
    from safetensors.torch import load_file, save_file

    source = folders["marian"][1]
    tensors = load_file(source / "model.safetensors")
    name = "model.decoder.layers.1.encoder_attn.k_proj.weight"
    tensors[name] = tensors[name][:-2].clone()
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    (wrong / "config.json").write_text((source / "config.json").read_text())
    save_file(tensors, wrong / "model.safetensors")
    d = MARIAN["d_model"]
    with pytest.raises(HFImportError, match=rf"k_proj\.weight \+ .*has shape \[{3 * d - 2}, {d}\].*\[{3 * d}, {d}\]"):
        _ours(wrong)
    code = (
        "import sys; from pathlib import Path; from model.hf.folders import read_config, read_model; "
        "folder = Path(sys.argv[1]); read_model(folder, read_config(folder), {'pad': 96, 'bos': 96, 'eos': 0}); "
        "print('torch._dynamo' in sys.modules)"
    )
    run = subprocess.run([sys.executable, "-c", code, str(source)], capture_output=True, text=True, cwd=ROOT)
    assert run.stdout.strip() == "False", run.stderr
