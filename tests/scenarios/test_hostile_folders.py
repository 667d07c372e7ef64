"""Hugging Face model folders that lie or are damaged: each is refused with one message that names the file and
what is wrong, before anything large is allocated and without blocking, and the command-line tools say so
without a traceback. Clean folders in the other formats (half precision, the legacy pickled .bin, an index of
shards, the Hugging Face cache's links into ``blobs/``) still open."""

from __future__ import annotations

import json
import os
import shutil
import struct
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")

from model.cli import convert, translate  # noqa: E402
from model.hf.folders import HFImportError, read_weights  # noqa: E402
from model.session import Session  # noqa: E402
from tests.hf_folders import bert_folder, gpt2_folder, marian_folder  # noqa: E402
from tests.scenarios.test_hostile_files import returns_without_blocking  # noqa: E402


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hf")
    return {"gpt2": gpt2_folder(root), "marian": marian_folder(root), "bert": bert_folder(root)}


def copy_of(made: dict[str, Path], kind: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(made[kind], tmp_path / made[kind].name))


@contextmanager
def small_memory(extra: int = 2**30) -> Iterator[None]:
    """Let the process map at most ``extra`` more bytes meanwhile: code that would allocate gigabytes fails
    at once (a RuntimeError or MemoryError) instead of taking them."""
    resource = pytest.importorskip("resource")
    if not sys.platform.startswith("linux"):
        pytest.skip("the address-space limit is measured from /proc")
    in_use = int(Path("/proc/self/statm").read_text().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = in_use + extra if hard == resource.RLIM_INFINITY else min(hard, in_use + extra)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def refused(folder: Path, monkeypatch: pytest.MonkeyPatch, says: str) -> str:
    """Open ``folder``; it must be refused with a message matching ``says``, before a model is built."""
    import model.session.state

    def no_model(cfg):
        raise AssertionError(f"a model was built from a lying folder: {cfg}")

    monkeypatch.setattr(model.session.state, "Transformer", no_model)
    with small_memory(), pytest.raises(HFImportError, match=says) as info:
        Session.load(folder, device="cpu")
    message = str(info.value)
    assert message.startswith(str(folder)), "the message names the folder first"
    assert "\n" not in message
    return message


# -- model.safetensors damaged -----------------------------------------------------------------------------------
def _header(data: bytes) -> tuple[dict, bytes]:
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8 : 8 + n]), data[8 + n :]


def _with_header(header: dict, body: bytes) -> bytes:
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + body


def _edit_first(change: Callable[[dict], None]) -> Callable[[bytes], bytes]:
    """A damage that edits the header entry of the first tensor."""

    def damage(data: bytes) -> bytes:
        header, body = _header(data)
        change(header[next(k for k in header if k != "__metadata__")])
        return _with_header(header, body)

    return damage


DAMAGES: dict[str, Callable[[bytes], bytes]] = {
    "0 bytes": lambda d: b"",
    "4 bytes": lambda d: d[:4],
    "random bytes": lambda d: bytes(range(256)) * 64,
    "header length 2^62": lambda d: struct.pack("<Q", 2**62) + d[8:],
    "header length past the end": lambda d: struct.pack("<Q", len(d) * 2) + d[8:],
    "header not JSON": lambda d: struct.pack("<Q", 10) + b"{not json}" + _header(d)[1],
    "header a list": lambda d: _with_header([1, 2], _header(d)[1]),  # type: ignore[arg-type]
    "header not UTF-8": lambda d: struct.pack("<Q", 4) + b"\xff\xfe{}" + _header(d)[1],
    "offsets past the end": _edit_first(lambda t: t.update(data_offsets=[0, 10**9])),
    "dtype lies": _edit_first(lambda t: t.update(dtype="F64")),
    "shape lies": _edit_first(lambda t: t.update(shape=[10**9, 10**9])),
    "negative shape": _edit_first(lambda t: t.update(shape=[-1, 24])),
    "unknown dtype": _edit_first(lambda t: t.update(dtype="Q7")),
    "truncated body": lambda d: d[: len(d) - 100],
}


@pytest.mark.parametrize("damage", DAMAGES, ids=list(DAMAGES))
def test_a_damaged_safetensors_file_is_refused_naming_it(made, tmp_path, monkeypatch, damage):
    folder = copy_of(made, "gpt2", tmp_path)
    weights = folder / "model.safetensors"
    weights.write_bytes(DAMAGES[damage](weights.read_bytes()))
    message = refused(folder, monkeypatch, "model.safetensors")
    assert "download" in message  # what to do


@pytest.mark.parametrize(
    "name, says", [("model.safetensors", "cannot be read as safetensors"), ("pytorch_model.bin", "not a PyTorch")]
)
def test_a_weights_file_linked_to_a_system_file_or_a_folder_is_refused(made, tmp_path, monkeypatch, name, says):
    """A link the person made is followed (a model kept on another disk), and what it leads to is judged."""
    if not Path("/etc/passwd").is_file():
        pytest.skip("no /etc/passwd here")
    folder = copy_of(made, "gpt2", tmp_path)
    (folder / "model.safetensors").unlink()
    (folder / name).symlink_to("/etc/passwd")
    refused(folder, monkeypatch, f"{name}: .*{says}")
    (folder / name).unlink()
    (folder / name).mkdir()
    refused(folder, monkeypatch, f"{name}: is not a regular file")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
@pytest.mark.parametrize("name", ["model.safetensors", "pytorch_model.bin", "config.json", "shard", "tokenizer.json"])
def test_a_named_pipe_in_place_of_a_file_does_not_block(made, tmp_path, name):
    folder = copy_of(made, "gpt2", tmp_path)
    if name == "shard":
        (folder / "model.safetensors").unlink()
        index = {"metadata": {}, "weight_map": {"wte.weight": "model-00001-of-00001.safetensors"}}
        (folder / "model.safetensors.index.json").write_text(json.dumps(index))
        name = "model-00001-of-00001.safetensors"
    else:
        (folder / name).unlink(missing_ok=True)
        if name == "pytorch_model.bin":
            (folder / "model.safetensors").unlink()
    os.mkfifo(folder / name)
    error = returns_without_blocking(lambda: Session.load(folder, device="cpu"), folder / name)
    assert isinstance(error, HFImportError), error
    assert name in str(error) and "not a regular file" in str(error)


# -- config.json that lies about sizes ------------------------------------------------------------------------------
LYING_CONFIGS = {  # name → (folder, changes to config.json, what the message must say)
    "GPT-2 vocab_size 1e9": ("gpt2", {"vocab_size": 10**9}, r"wte.weight has shape \[320, 24\].*\[1000000000, 24\]"),
    "GPT-2 n_positions 1e9": (
        "gpt2",
        {"n_positions": 10**9},
        r"n_positions is 1,000,000,000, more than this program accepts \(65,536\)",
    ),
    "GPT-2 n_embd 2^20": ("gpt2", {"n_embd": 2**20, "n_head": 1}, r"has shape \[320, 24\].*\[320, 1048576\]"),
    "GPT-2 n_inner 1e9": ("gpt2", {"n_inner": 10**9}, r"c_fc.weight has shape \[96, 24\].*\[1000000000, 24\]"),
    "GPT-2 a million layers": (
        "gpt2",
        {"n_layer": 10**6},
        r"n_layer is 1,000,000, more than this program accepts \(1,000\)",
    ),
    "GPT-2 a layer too few": ("gpt2", {"n_layer": 1}, "weights this program does not know: h.1"),
    "GPT-2 heads do not divide": ("gpt2", {"n_head": 5}, r"n_embd \(24\) is not divisible by n_head \(5\)"),
    "Marian positions 1e9": ("marian", {"max_position_embeddings": 10**9}, "max_position_embeddings is 1,000,000,000"),
    "Marian positions 1e7": ("marian", {"max_position_embeddings": 10**7}, "max_position_embeddings is 10,000,000"),
    "Marian vocab_size 1e9": (
        "marian",
        {"vocab_size": 10**9, "decoder_vocab_size": 10**9},
        r"model.shared.weight has shape .*\[1000000000, 24\]",
    ),
    "Marian d_model 2^20": (
        "marian",
        {"d_model": 2**20, "encoder_attention_heads": 1, "decoder_attention_heads": 1},
        r"has shape \[\d+, 24\].*\[\d+, 1048576\]",
    ),
    "BERT intermediate 1e9": ("bert", {"intermediate_size": 10**9}, r"intermediate.dense.weight .*\[1000000000, 24\]"),
    "BERT positions 1e9": ("bert", {"max_position_embeddings": 10**9}, "max_position_embeddings is 1,000,000,000"),
}


@pytest.mark.parametrize("lie", LYING_CONFIGS, ids=list(LYING_CONFIGS))
def test_a_config_that_lies_about_sizes_is_refused_before_allocating(made, tmp_path, monkeypatch, lie):
    kind, changes, says = LYING_CONFIGS[lie]
    folder = copy_of(made, kind, tmp_path)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **changes}))
    refused(folder, monkeypatch, says)


WRONG_TYPES = {  # name → (folder, changes to config.json, what the message must say)
    "vocab_size null": ("gpt2", {"vocab_size": None}, "config.json: vocab_size is null, but it must be a whole number"),
    "vocab_size 'abc'": ("gpt2", {"vocab_size": "abc"}, "vocab_size is 'abc', but it must be a whole number"),
    "n_head 2.5": ("gpt2", {"n_head": 2.5}, "n_head is 2.5, but it must be a whole number"),
    "n_layer true": ("gpt2", {"n_layer": True}, "n_layer is true, but it must be a whole number"),
    "n_embd 0": ("gpt2", {"n_embd": 0}, "n_embd is 0, but it must be a whole number of at least 1"),
    "model_type a list": ("gpt2", {"model_type": ["gpt2"]}, r"model_type is \['gpt2'\], but it must be one of"),
    "architectures a string": ("gpt2", {"architectures": "GPT2LMHeadModel"}, "architectures is 'GPT2LMHeadModel'"),
    "layer_norm_epsilon 'abc'": ("gpt2", {"layer_norm_epsilon": "abc"}, "layer_norm_epsilon is 'abc', but it must"),
    "layer_norm_epsilon NaN": ("gpt2", {"layer_norm_epsilon": float("nan")}, "layer_norm_epsilon is NaN, but it"),
    "activation 5": ("gpt2", {"activation_function": 5}, "activation_function is 5, but it must be one of"),
    "scale_attn_weights 'yes'": ("gpt2", {"scale_attn_weights": "yes"}, "scale_attn_weights is 'yes', but it must"),
    "Marian d_model null": ("marian", {"d_model": None}, "d_model is null, but it must be a whole number"),
    "Marian dropout 'abc'": ("marian", {"dropout": "abc"}, "dropout is 'abc', but it must be a number"),
    "Marian eos_token_id -1": ("marian", {"eos_token_id": -1}, "eos_token_id is -1, but it must be a whole number"),
    "BERT hidden_dropout 2": ("bert", {"hidden_dropout_prob": 2}, "hidden_dropout_prob is 2, but it must be a number"),
    "BERT hidden_size '24'": ("bert", {"hidden_size": "24"}, "hidden_size is '24', but it must be a whole number"),
}


@pytest.mark.parametrize("case", WRONG_TYPES, ids=list(WRONG_TYPES))
def test_a_config_value_of_the_wrong_kind_is_named_with_its_key(made, tmp_path, monkeypatch, case):
    kind, changes, says = WRONG_TYPES[case]
    folder = copy_of(made, kind, tmp_path)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **changes}))
    refused(folder, monkeypatch, says)


# -- an index of shards that points elsewhere --------------------------------------------------------------------
def _sharded(made: dict[str, Path], tmp_path: Path, where: Callable[[Path], str]) -> Path:
    """The GPT-2 folder with its weights as one shard named by an index; ``where`` gives the index's path for it."""
    folder = copy_of(made, "gpt2", tmp_path)
    shard = folder / "model-00001-of-00001.safetensors"
    (folder / "model.safetensors").rename(shard)
    from safetensors import safe_open

    with safe_open(shard, "pt") as f:
        names = list(f.keys())
    named = where(shard)
    index = {"metadata": {}, "weight_map": {n: named for n in names}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    return folder


def test_an_index_of_shards_opens(made, tmp_path):
    folder = _sharded(made, tmp_path, lambda shard: shard.name)
    assert Session.load(folder, device="cpu").model_cfg.vocab_size == 320


def _outside(shard: Path) -> Path:
    """The shard moved out of its folder (as a file another folder holds)."""
    moved = shard.parent.parent / "elsewhere.safetensors"
    shard.rename(moved)
    return moved


ESCAPES = {  # name → (the index's entry for the shard, what the message must say)
    "../../etc/passwd": (lambda s: "../../../../../../../../etc/passwd", r"\.\./.*outside the folder"),
    "an absolute path": (lambda s: "/etc/passwd", "/etc/passwd.*outside the folder"),
    "a ../ path to a real shard": (lambda s: f"../{_outside(s).name}", "elsewhere.safetensors.*outside the folder"),
    "a link that leaves": (lambda s: _link(s.parent / "link.safetensors", _outside(s)), "link.safetensors.*outside"),
    "a missing shard": (lambda s: "model-00002-of-00002.safetensors", "model-00002-of-00002.safetensors.*missing"),
}


def _link(link: Path, target: Path) -> str:
    link.symlink_to(target)
    return link.name


@pytest.mark.parametrize("escape", ESCAPES, ids=list(ESCAPES))
def test_an_index_naming_a_file_outside_the_folder_is_refused(made, tmp_path, monkeypatch, escape):
    entry, says = ESCAPES[escape]
    folder = _sharded(made, tmp_path, entry)
    refused(folder, monkeypatch, f"model.safetensors.index.json.*{says}")


@pytest.mark.parametrize(
    "index, says",
    [
        ("{not json", "cannot be read as JSON"),
        ('{"weight_map": [1]}', "weight_map"),
        ('{"weight_map": {"a": 5}}', "weight_map"),
    ],
    ids=["not JSON", "weight_map a list", "a file name not text"],
)
def test_an_unreadable_index_is_refused(made, tmp_path, monkeypatch, index, says):
    folder = _sharded(made, tmp_path, lambda shard: shard.name)
    (folder / "model.safetensors.index.json").write_text(index)
    refused(folder, monkeypatch, f"model.safetensors.index.json.*{says}")


def test_the_hugging_face_cache_layout_still_opens(made, tmp_path):
    """``snapshots/<revision>/`` holds links into the model's ``blobs/`` folder: those may leave the snapshot."""
    repo = tmp_path / "models--someone--tiny-gpt2"
    snapshot, blobs = repo / "snapshots" / "0123abc", repo / "blobs"
    snapshot.mkdir(parents=True)
    blobs.mkdir()
    for i, file in enumerate(sorted(made["gpt2"].iterdir())):
        shutil.copy(file, blobs / f"blob{i}")
        (snapshot / file.name).symlink_to(Path("..", "..", "blobs", f"blob{i}"))
    assert Session.load(snapshot, device="cpu").model_cfg.vocab_size == 320


# -- weights of the wrong kind -------------------------------------------------------------------------------------
def _rewrite_weights(folder: Path, change: Callable[[str, torch.Tensor], torch.Tensor]) -> None:
    from safetensors.torch import load_file, save_file

    tensors = load_file(folder / "model.safetensors")
    save_file({k: change(k, v).contiguous() for k, v in tensors.items()}, folder / "model.safetensors")


BAD_VALUES = {
    "NaN": (lambda k, v: v.fill_(float("nan")) if k.endswith("h.1.mlp.c_fc.weight") else v, "NaN or infinite"),
    "inf": (lambda k, v: v.fill_(float("inf")) if k.endswith("ln_f.bias") else v, "NaN or infinite"),
    "int8": (lambda k, v: v.to(torch.int8) if k.endswith("wte.weight") else v, r"wte.weight is stored as int8"),
    "bool": (lambda k, v: v.bool() if k.endswith("h.0.ln_1.weight") else v, r"ln_1.weight is stored as bool"),
}


@pytest.mark.parametrize("bad", BAD_VALUES, ids=list(BAD_VALUES))
def test_weights_that_are_not_finite_numbers_are_refused_naming_the_tensor(made, tmp_path, monkeypatch, bad):
    folder = copy_of(made, "gpt2", tmp_path)
    change, says = BAD_VALUES[bad]
    _rewrite_weights(folder, change)
    refused(folder, monkeypatch, f"model.safetensors: .*{says}")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_weights_load_as_float32(made, tmp_path, dtype):
    folder = copy_of(made, "gpt2", tmp_path)
    _rewrite_weights(folder, lambda k, v: v.to(dtype))
    session = Session.load(folder, device="cpu")
    original = read_weights(made["gpt2"])
    ours = session.model.src_embed.weight
    assert ours.dtype == torch.float32
    torch.testing.assert_close(ours, original["transformer.wte.weight"].to(dtype).float())


# -- pytorch_model.bin ------------------------------------------------------------------------------------------
def _as_bin(made: dict[str, Path], tmp_path: Path, zipped: bool = True) -> Path:
    folder = copy_of(made, "gpt2", tmp_path)
    tensors = read_weights(folder)
    (folder / "model.safetensors").unlink()
    torch.save(tensors, folder / "pytorch_model.bin", _use_new_zipfile_serialization=zipped)
    return folder


def test_a_legacy_pickled_bin_file_opens(made, tmp_path):
    folder = _as_bin(made, tmp_path, zipped=False)
    assert (folder / "pytorch_model.bin").read_bytes()[:2] != b"PK"  # not a zip file
    expected = read_weights(made["gpt2"])
    got = read_weights(folder)
    assert got.keys() == expected.keys() and all(torch.equal(got[k], expected[k]) for k in got)
    assert Session.load(folder, device="cpu").model_cfg.vocab_size == 320


class _RunsCode:
    def __reduce__(self):
        return (Path.touch, (Path(MARKER),))


MARKER = ""


@pytest.mark.parametrize("zipped", [True, False], ids=["zip", "legacy"])
def test_a_bin_file_that_would_run_code_is_refused_in_both_formats(made, tmp_path, monkeypatch, zipped):
    global MARKER
    folder = _as_bin(made, tmp_path, zipped)
    MARKER = str(tmp_path / "ran")
    import pickle

    hostile = {"wte.weight": torch.zeros(2, 2), "payload": _RunsCode()}
    torch.save(hostile, folder / "pytorch_model.bin", pickle_module=pickle, _use_new_zipfile_serialization=zipped)
    refused(folder, monkeypatch, "pytorch_model.bin: refused — it holds Python objects")
    assert not Path(MARKER).exists()


BIN_DAMAGES = {
    "0 bytes": (lambda d: b"", "pytorch_model.bin: is empty"),
    "random bytes": (lambda d: bytes(range(256)) * 64, "pytorch_model.bin: is not a PyTorch weights file"),
    "truncated zip": (lambda d: d[: len(d) // 2], "pytorch_model.bin: is truncated or damaged"),
    "truncated legacy": (None, "pytorch_model.bin: is truncated or damaged"),
}


@pytest.mark.parametrize("damage", BIN_DAMAGES, ids=list(BIN_DAMAGES))
def test_a_damaged_bin_file_gets_its_own_message(made, tmp_path, monkeypatch, damage):
    change, says = BIN_DAMAGES[damage]
    folder = _as_bin(made, tmp_path, zipped=change is not None)
    path = folder / "pytorch_model.bin"
    data = path.read_bytes()
    path.write_bytes(change(data) if change else data[: len(data) // 2])
    message = refused(folder, monkeypatch, says)
    assert "download" in message and "could run code" not in message


# -- the command-line tools ----------------------------------------------------------------------------------------
CLI_CASES = {
    "random weights file": (lambda f: (f / "model.safetensors").write_bytes(b"\0" * 100), "model.safetensors"),
    "lying config": (lambda f: _edit_config(f, max_position_embeddings=10**9), "max_position_embeddings"),
    "wrong type in config": (lambda f: _edit_config(f, d_model="abc"), "d_model is 'abc'"),
    "NaN weights": (lambda f: _rewrite_weights(f, lambda k, v: v.fill_(float("nan"))), "NaN"),
}


def _edit_config(folder: Path, **changes: object) -> None:
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **changes}))


@pytest.mark.parametrize("case", CLI_CASES, ids=list(CLI_CASES))
def test_translate_and_convert_say_what_is_wrong_in_one_line(made, tmp_path, capsys, case):
    change, says = CLI_CASES[case]
    folder = copy_of(made, "marian", tmp_path)
    change(folder)
    out = tmp_path / "out.ckpt"
    runs = {
        "translate": lambda: translate.main(["--checkpoint", str(folder), "--device", "cpu", "hello"]),
        "convert": lambda: convert.main([str(folder), str(out)]),
    }
    for tool, run in runs.items():
        with small_memory():
            assert run() == 2, tool  # an exception escaping main() would fail the test here
        captured = capsys.readouterr()
        errors = [line for line in captured.err.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and errors[0].startswith(f"error: {folder}") and says in errors[0], captured.err
        assert "Traceback" not in captured.err and captured.out == ""
    assert not out.exists()
