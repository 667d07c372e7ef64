"""Open a Hugging Face model folder (Marian ``opus-mt-*``, GPT-2, BERT) in this project's engine.

A folder as ``save_pretrained`` writes it or ``huggingface-cli download NAME --local-dir DIR`` fetches it:
``config.json``, the weights (``model.safetensors``, sharded safetensors, or ``pytorch_model.bin``, which is
read with ``torch.load(weights_only=True)`` so that a file carrying Python objects cannot run code), and the
tokenizer files (see :mod:`model.hf.tokenizers`). The architecture is mapped onto :class:`ModelConfig`
(Marian: the paper's post-LN encoder–decoder with sines and cosines in split halves, SiLU, √d-scaled shared
embeddings, ``final_logits_bias`` as the output bias, the padding token as the decoder's start; GPT-2: a pre-LN
decoder-only stack with learned positions and a final norm, tanh-GELU, Conv1D weights transposed into linears;
BERT: a post-LN encoder-only stack with token-type embeddings, an embedding LayerNorm and the masked-LM head),
and every weight is checked against the shape the configuration implies before anything is built.

Nothing in a folder is trusted before it is checked: config.json's values for their kind and against this
program's limits (positions, layers, heads dividing the width); the configuration against the shapes the
weight files' headers give, before any tensor is read (so a lying config.json allocates nothing); the file
names an index of shards lists, which must stay inside the folder; each weight's type (floating point) and
values (finite). Only regular files are opened, so a named pipe never blocks (:mod:`model.io.safe_files`).

``transformers`` itself is not needed at run time. Anything else (another ``model_type`` or architecture, a
missing or mis-shaped weight, missing tokenizer files, a folder that holds no model, a damaged file) is
refused with a :class:`HFImportError` that names the file, what was found and what to do; nothing
half-loaded stays behind.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import re
from collections.abc import Callable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from model.core.config import ModelConfig
from model.core.settings import ConfigError
from model.hf.supported import SUPPORTED, unsupported
from model.io.checkpoint import MAX_LAYERS, MAX_POSITIONS, CheckpointError, all_finite, weight_shapes
from model.io.safe_files import NotAFileError, check_regular, inside, open_regular, read_regular

if TYPE_CHECKING:
    from collections.abc import Iterator

    from model.core.transformer import Transformer
    from model.data import DataSpec
    from model.training.config import TrainConfig

ACTIVATIONS = {
    "swish": "silu",
    "silu": "silu",
    "gelu": "gelu",
    "relu": "relu",
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_fast": "gelu_tanh",
}
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")


class HFImportError(CheckpointError):
    """A Hugging Face folder that cannot be opened, with what was found and what to do."""


def is_model_folder(path: str | Path) -> bool:
    """Whether ``path`` is a folder (the caller then opens it as a Hugging Face model folder)."""
    return Path(path).is_dir()


def read_config(folder: Path) -> dict[str, Any]:
    """``config.json`` as a dict; refuses a folder without one, or with an unsupported model."""
    path = folder / "config.json"
    if not os.path.lexists(path):
        found = sorted(p.name for p in folder.iterdir())[:8] if folder.is_dir() else []
        raise HFImportError(
            f"{folder}: not a model folder (no config.json; found {', '.join(found) or 'nothing'}). Open a folder "
            f"downloaded with huggingface-cli download NAME --local-dir DIR, or saved with save_pretrained."
        )
    try:
        config = json.loads(read_regular(path).decode("utf-8"))
    except NotAFileError as exc:
        raise HFImportError(str(exc)) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise HFImportError(f"{path}: cannot be read as JSON ({exc})") from None
    if not isinstance(config, dict):
        raise HFImportError(f"{path}: is not a table of settings")
    s = _Settings(config, path)
    model_type = config.get("model_type")
    if not isinstance(model_type, str):
        raise s.wrong("model_type", model_type, f"one of {', '.join(SUPPORTED)}")
    architectures = config.get("architectures")
    if architectures and not (isinstance(architectures, list) and all(isinstance(a, str) for a in architectures)):
        raise s.wrong("architectures", architectures, "a list of class names such as ['GPT2LMHeadModel']")
    reason = unsupported(config)
    if reason is not None:
        raise HFImportError(f"{folder}: {reason}")
    return config


# -- the configuration -------------------------------------------------------------------------------------
_REQUIRED: Any = object()  # no default: the key must be in config.json


class _Settings:
    """config.json's values, each checked for its kind (and size) as it is read; a wrong one is refused with
    its key, its value and what it must be, before anything is built from it. ``null`` counts as absent only
    where ``nullable`` says so (Hugging Face writes null for token ids and sizes it leaves to their defaults)."""

    def __init__(self, config: dict[str, Any], path: Path) -> None:
        self.config, self.path = config, path

    def wrong(self, key: str, value: Any, expected: str) -> HFImportError:
        return HFImportError(
            f"{self.path}: {key} is {_shown(value)}, but it must be {expected}; correct it or download the file again"
        )

    def _get(self, key: str, default: Any, nullable: bool) -> Any:
        value = self.config.get(key, default)
        if value is None and nullable:
            value = default
        if value is _REQUIRED:
            kind = self.config.get("model_type")
            raise HFImportError(f"{self.path.parent}: config.json lacks {key!r}, which a {kind} model needs")
        return value

    def whole(self, key: str, default: Any = _REQUIRED, low: int = 1, high: int = 0, nullable: bool = False) -> int:
        """A whole number ≥ ``low`` (and ≤ ``high``, a limit of this program, when given)."""
        value = self._get(key, default, nullable)
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise self.wrong(key, value, f"a whole number of at least {low}")
        if high and value > high:
            raise HFImportError(
                f"{self.path}: {key} is {value:,}, more than this program accepts ({high:,}); config.json does not "
                "describe a model this program can open (or it was altered: download it again)"
            )
        return value

    def number(self, key: str, default: float, probability: bool = False) -> float:
        """A real number: a probability in [0, 1), else a positive number."""
        value = self._get(key, default, nullable=False)
        number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
        if probability and not 0 <= number < 1:
            raise self.wrong(key, value, "a number from 0 up to (not including) 1")
        if not probability and not 0 < number < math.inf:
            raise self.wrong(key, value, "a positive number")
        return float(number)

    def flag(self, key: str, default: bool) -> bool:
        value = self._get(key, default, nullable=False)
        if not isinstance(value, bool):
            raise self.wrong(key, value, "true or false")
        return value

    def text(self, key: str, default: Any = _REQUIRED, choices: tuple[str, ...] = ()) -> str:
        value = self._get(key, default, nullable=False)
        if not isinstance(value, str) or value not in choices:
            raise self.wrong(key, value, f"one of {', '.join(choices)}")
        return value

    def heads(self, width: str, heads: str) -> int:
        """The head count under the key ``heads``, which must divide the model width under the key ``width``."""
        d, h = self.whole(width), self.whole(heads)
        if d % h:
            raise HFImportError(
                f"{self.path}: {width} ({d}) is not divisible by {heads} ({h}); the file is damaged: download it again"
            )
        return h


def _shown(value: Any) -> str:
    """A value as config.json writes it (null, true), else as Python shows it."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    return "NaN" if isinstance(value, float) and math.isnan(value) else repr(value)


def _activation(s: _Settings, key: str, default: str) -> str:
    return ACTIVATIONS[s.text(key, default, choices=tuple(ACTIVATIONS))]


def _marian_config(s: _Settings, where: str) -> dict[str, Any]:
    c = s.config
    for a, b in (("encoder_attention_heads", "decoder_attention_heads"), ("encoder_ffn_dim", "decoder_ffn_dim")):
        if c.get(a) != c.get(b):
            raise HFImportError(f"{where}: {a} ({c.get(a)}) differs from {b} ({c.get(b)}); not supported")
    if c.get("normalize_before") or c.get("add_final_layer_norm") or c.get("normalize_embedding"):
        raise HFImportError(f"{where}: a pre-LN or embedding-normalised Marian model is not supported")
    vocab = s.whole("vocab_size")
    pad = s.whole("pad_token_id", vocab - 1, low=0, nullable=True)
    return dict(
        arch="encoder_decoder",
        src_vocab_size=vocab,
        tgt_vocab_size=s.whole("decoder_vocab_size", vocab, nullable=True),
        shared_vocab=s.flag("share_encoder_decoder_embeddings", True),
        tie_embeddings=s.flag("tie_word_embeddings", True),
        d_model=s.whole("d_model"),
        n_heads=s.heads("d_model", "encoder_attention_heads"),
        n_encoder_layers=s.whole("encoder_layers", high=MAX_LAYERS),
        n_decoder_layers=s.whole("decoder_layers", high=MAX_LAYERS),
        d_ff=s.whole("encoder_ffn_dim"),
        max_len=s.whole("max_position_embeddings", high=MAX_POSITIONS),
        activation=_activation(s, "activation_function", "swish"),
        positional="sinusoidal",
        sinusoid_layout="split",
        scale_embedding=s.flag("scale_embedding", False),
        norm="post",
        dropout=s.number("dropout", 0.1, probability=True),
        pad_id=pad,
        bos_id=s.whole("decoder_start_token_id", pad, low=0, nullable=True),
        eos_id=s.whole("eos_token_id", 0, low=0, nullable=True),
    )


def _gpt2_config(s: _Settings, where: str) -> dict[str, Any]:
    if not s.flag("scale_attn_weights", True) or s.flag("scale_attn_by_inverse_layer_idx", False):
        raise HFImportError(f"{where}: GPT-2 attention without the 1/√d scale, or scaled per layer, is not supported")
    if s.flag("add_cross_attention", False):
        raise HFImportError(f"{where}: a GPT-2 with cross-attention is not supported")
    d = s.whole("n_embd")
    eos = s.whole("eos_token_id", 50256, low=0, nullable=True)
    return dict(
        arch="decoder_only",
        vocab_size=s.whole("vocab_size"),
        src_vocab_size=0,
        tgt_vocab_size=0,
        tie_embeddings=True,
        d_model=d,
        n_heads=s.heads("n_embd", "n_head"),
        n_decoder_layers=s.whole("n_layer", high=MAX_LAYERS),
        n_encoder_layers=1,
        d_ff=s.whole("n_inner", 4 * d, nullable=True),
        max_len=s.whole("n_positions", high=MAX_POSITIONS),
        activation=_activation(s, "activation_function", "gelu_new"),
        positional="learned",
        scale_embedding=False,
        norm="pre",
        dropout=s.number("resid_pdrop", 0.1, probability=True),
        layer_norm_eps=s.number("layer_norm_epsilon", 1e-5),
        pad_id=eos,
        bos_id=s.whole("bos_token_id", eos, low=0, nullable=True),
        eos_id=eos,
    )


def _bert_config(s: _Settings, where: str, specials: dict[str, int]) -> dict[str, Any]:
    act = s.config.get("hidden_act", "gelu")
    if act != "gelu":
        raise HFImportError(f"{where}: BERT with activation {act!r} is not supported (only gelu)")
    if s.config.get("position_embedding_type", "absolute") != "absolute" or s.config.get("type_vocab_size", 2) != 2:
        raise HFImportError(f"{where}: BERT with relative positions or other than 2 token types is not supported")
    return dict(
        arch="encoder_only",
        vocab_size=s.whole("vocab_size"),
        src_vocab_size=0,
        tgt_vocab_size=0,
        tie_embeddings=True,
        d_model=s.whole("hidden_size"),
        n_heads=s.heads("hidden_size", "num_attention_heads"),
        n_encoder_layers=s.whole("num_hidden_layers", high=MAX_LAYERS),
        n_decoder_layers=1,
        d_ff=s.whole("intermediate_size"),
        max_len=s.whole("max_position_embeddings", high=MAX_POSITIONS),
        activation="gelu",
        positional="learned",
        scale_embedding=False,
        embed_norm=True,
        norm="post",
        dropout=s.number("hidden_dropout_prob", 0.1, probability=True),
        layer_norm_eps=s.number("layer_norm_eps", 1e-12),
        pad_id=s.whole("pad_token_id", specials["pad"], low=0, nullable=True),
        bos_id=specials["bos"],
        eos_id=specials["eos"],
    )


def model_config(config: dict[str, Any], where: str, specials: dict[str, int], n_classes: int = 0) -> ModelConfig:
    """The :class:`ModelConfig` of a Hugging Face ``config`` (``specials``: the tokenizer's pad/bos/eos ids,
    which BERT's config does not name). Every value is checked for its kind and against this program's limits
    (:data:`~model.io.checkpoint.MAX_POSITIONS`, :data:`~model.io.checkpoint.MAX_LAYERS`, heads dividing the width)."""
    s = _Settings(config, Path(where) / "config.json")
    model_type = s.text("model_type", choices=tuple(SUPPORTED))
    if model_type == "marian":
        fields = _marian_config(s, where)
    elif model_type == "gpt2":
        fields = _gpt2_config(s, where)
    else:
        fields = _bert_config(s, where, specials)
    try:
        return ModelConfig(**fields, n_classes=n_classes)
    except ConfigError as exc:
        raise HFImportError(f"{where}: its configuration cannot be used ({exc})") from None


# -- the weights ---------------------------------------------------------------------------------------------
# safetensors' type codes, as torch names them; weights must be of the first four
_DTYPES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "BOOL": "bool", "U8": "uint8"}
_DTYPES.update({f"I{bits}": f"int{bits}" for bits in (8, 16, 32, 64)})
_FLOATS = ("float64", "float32", "float16", "bfloat16")
_DAMAGED = "the file is damaged or incomplete; download it again"
# buffers some files hold besides weights, never read as numbers: GPT-2's causal mask (bool, or -1e4 fill values)
# and BERT's position ids (integers); every other tensor must be floating point and finite
_BUFFERS = re.compile(r".*attn\.(masked_)?bias|.*position_ids")


@dataclass(frozen=True)
class _Stored:
    """One tensor as its file describes it, before it is read."""

    file: Path
    shape: tuple[int, ...]
    dtype: str  # as torch names it ("float16", "int8")
    floating: bool


def _stored(file: Path, shape: Any, dtype: str | torch.dtype) -> _Stored:
    """A tensor's description from a safetensors header (type "BF16") or a tensor's own dtype."""
    name = str(dtype).removeprefix("torch.") if isinstance(dtype, torch.dtype) else _DTYPES.get(dtype, dtype)
    return _Stored(file, tuple(shape), name, name in _FLOATS)


def _weight_files(folder: Path) -> list[Path]:
    """The files that hold the folder's weights: ``model.safetensors``, the shards its index names, or
    ``pytorch_model.bin`` (the first of these present)."""
    single, index, pickled = (folder / name for name in WEIGHT_FILES)
    if os.path.lexists(single):
        return [single]
    if os.path.lexists(index):
        return _shards(folder, index)
    if os.path.lexists(pickled):
        return [pickled]
    others = [p.name for p in folder.iterdir() if p.suffix in (".h5", ".msgpack", ".onnx", ".gguf")]
    hint = f" (found {', '.join(others)}: another framework's format)" if others else ""
    raise HFImportError(
        f"{folder}: no PyTorch weights{hint}; looked for {', '.join(WEIGHT_FILES)}. Download the "
        f"model's model.safetensors or pytorch_model.bin."
    )


def _shards(folder: Path, index: Path) -> list[Path]:
    """The shard files ``index`` names, each inside ``folder`` (or, in the Hugging Face cache, its blobs)."""
    try:
        table = json.loads(read_regular(index).decode("utf-8"))
    except NotAFileError as exc:
        raise HFImportError(str(exc)) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise HFImportError(f"{index}: cannot be read as JSON ({exc}); {_DAMAGED}") from None
    weight_map = table.get("weight_map") if isinstance(table, dict) else None
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise HFImportError(f"{index}: its weight_map is not a table of weight names and file names; {_DAMAGED}")
    real = folder.resolve()
    blobs = (real.parent.parent / "blobs",) if real.parent.name == "snapshots" else ()
    shards = []
    for name in sorted(set(weight_map.values())):
        try:
            shard = inside(folder, name, index, also=blobs)
        except NotAFileError as exc:
            raise HFImportError(str(exc)) from None
        if not os.path.lexists(shard):
            raise HFImportError(f"{index}: names {name}, which is missing; download it too")
        shards.append(shard)
    return shards


def _safetensors_header(path: Path) -> dict[str, _Stored]:
    """Name, shape and type of every tensor in a safetensors file, from its header (no tensor is read)."""
    from safetensors import SafetensorError, safe_open

    try:
        check_regular(path)
        with safe_open(path, "pt") as f:
            kinds = {name: f.get_slice(name) for name in f.keys()}
            return {name: _stored(path, k.get_shape(), k.get_dtype()) for name, k in kinds.items()}
    except NotAFileError as exc:
        raise HFImportError(str(exc)) from None
    except (SafetensorError, OSError, ValueError) as exc:
        raise HFImportError(f"{path}: cannot be read as safetensors ({exc}); {_DAMAGED}") from None


def _read_safetensors(path: Path) -> dict[str, Tensor]:
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        check_regular(path)
        return load_file(path)
    except NotAFileError as exc:
        raise HFImportError(str(exc)) from None
    except (SafetensorError, OSError, ValueError, RuntimeError) as exc:
        raise HFImportError(f"{path}: cannot be read as safetensors ({exc}); {_DAMAGED}") from None


def _read_pickled(path: Path) -> dict[str, Tensor]:
    """A ``pytorch_model.bin``, read by PyTorch's restricted unpickler: tensors and plain data only. The zip
    format (PyTorch ≥ 1.6) is mapped from the disk; the older pickle stream is read whole."""
    try:
        with open_regular(path) as handle:
            start = handle.read(4)
            if not start:
                raise HFImportError(f"{path}: is empty (0 bytes); the download did not finish: download it again")
            if not start.startswith((b"PK", b"\x80")):  # a zip file, or a pickle stream (protocol 2 and up)
                raise HFImportError(
                    f"{path}: is not a PyTorch weights file (neither a zip archive nor a pickle); {_DAMAGED}"
                )
            handle.seek(0)
            zipped = start.startswith(b"PK")
            data = torch.load(path if zipped else handle, map_location="cpu", weights_only=True, mmap=zipped)
    except NotAFileError as exc:
        raise HFImportError(str(exc)) from None
    except pickle.UnpicklingError as exc:
        refused = re.search(r"unsupported global:? (?:GLOBAL )?([\w.]+)", str(exc), re.IGNORECASE)
        if refused:
            raise HFImportError(
                f"{path}: refused — it holds Python objects besides weights (such as {refused[1]}), and opening "
                f"it could run code. Use the model's model.safetensors instead."
            ) from None
        raise HFImportError(f"{path}: is truncated or damaged ({str(exc)[:160]}); download it again") from None
    except HFImportError:
        raise
    except Exception as exc:  # noqa: BLE001 — whatever reading arbitrary bytes raises (EOFError, RuntimeError…)
        raise HFImportError(
            f"{path}: is truncated or damaged ({type(exc).__name__}: {str(exc)[:160]}); download it again"
        ) from None
    if not (isinstance(data, dict) and all(isinstance(k, str) and isinstance(v, Tensor) for k, v in data.items())):
        raise HFImportError(f"{path}: is not a table of weights; {_DAMAGED}")
    return data


class WeightFiles:
    """The weights of a model folder: what each tensor is (from the files' headers, nothing read yet), then
    the tensors themselves. Every tensor this program uses must be floating point and finite."""

    def __init__(self, folder: Path) -> None:
        self.files = _weight_files(folder)
        self._pickled: dict[str, Tensor] | None = None
        self.stored: dict[str, _Stored] = {}
        for file in self.files:
            if file.name == WEIGHT_FILES[2]:
                self._pickled = _read_pickled(file)  # mapped, not read (the zip format)
                self.stored.update({k: _stored(file, v.shape, v.dtype) for k, v in self._pickled.items()})
            else:
                self.stored.update(_safetensors_header(file))
        for name, t in self.stored.items():
            if not t.floating and not _BUFFERS.fullmatch(name):
                raise HFImportError(
                    f"{t.file}: the weight {name} is stored as {t.dtype}; this program opens weights stored as "
                    f"floating-point numbers ({', '.join(_FLOATS)}): download the model in one of those"
                )

    def planned(self) -> dict[str, Tensor]:
        """Every tensor as an empty one of its shape on the ``meta`` device: conversions run on these
        allocate nothing, and show what the model would be."""
        return {k: torch.empty(t.shape, device="meta") for k, t in self.stored.items()}

    def read(self) -> dict[str, Tensor]:
        """Every tensor, floating point ones as float32 (on the CPU); NaN or infinite values are refused."""
        tensors: dict[str, Tensor] = {}
        for file in self.files:
            tensors.update(self._pickled if self._pickled is not None else _read_safetensors(file))
        out = {k: v.float() if v.is_floating_point() else v for k, v in tensors.items()}
        for name, value in out.items():
            if value.is_floating_point() and not _BUFFERS.fullmatch(name) and not all_finite(value):
                raise HFImportError(
                    f"{self.stored[name].file}: the weight {name} contains NaN or infinite values, so the model "
                    f"cannot compute anything; {_DAMAGED}"
                )
        return out


def read_weights(folder: Path) -> dict[str, Tensor]:
    """Every tensor of the folder's weights, by its Hugging Face name (float32, on the CPU)."""
    return WeightFiles(Path(folder)).read()


def _strip_prefix(hf: dict[str, Tensor], prefix: str) -> dict[str, Tensor]:
    """Names without ``prefix`` (GPT-2 files are saved with or without ``transformer.``), and BERT's
    old LayerNorm names (``gamma``/``beta``) as today's (``weight``/``bias``)."""
    out = {}
    for name, value in hf.items():
        name = re.sub(r"\.gamma$", ".weight", re.sub(r"\.beta$", ".bias", name))
        out[name[len(prefix) :] if name.startswith(prefix) else name] = value
    return out


class _Weights:
    """Takes tensors from a Hugging Face state dict by name, remembering which were used."""

    def __init__(self, hf: dict[str, Tensor], where: str) -> None:
        self.hf, self.where, self.used = hf, where, set[str]()
        self.names: dict[int, str] = {}  # id of a tensor handed out → the file's name(s) for it

    def __call__(self, name: str, transpose: bool = False) -> Tensor:
        if name not in self.hf:
            raise HFImportError(f"{self.where}: the weight {name} is missing; the file is not a complete model")
        self.used.add(name)
        value = self.hf[name]
        value = value.t().contiguous() if transpose else value
        self.names[id(value)] = name
        return value

    def has(self, name: str) -> bool:
        return name in self.hf

    def cat(self, names: list[str]) -> Tensor:
        parts = [self(n) for n in names]
        if all(p.is_meta and p.dim() and p.shape[1:] == parts[0].shape[1:] for p in parts):
            # the planned shapes (WeightFiles.planned): torch.cat of meta tensors runs a Python kernel whose first
            # call imports torch._dynamo, ~2 s of Python holding the GIL that the window's thread waits behind
            value = torch.empty((sum(p.shape[0] for p in parts), *parts[0].shape[1:]), device="meta")
        else:
            value = torch.cat(parts)
        self.names[id(value)] = " + ".join(names)
        return value

    def unused(self, ignored: Callable[[str], bool]) -> list[str]:
        return sorted(n for n in self.hf if n not in self.used and not ignored(n))


def _linear(out: dict[str, Tensor], ours: str, w: _Weights, theirs: str, transpose: bool = False) -> None:
    out[f"{ours}.weight"], out[f"{ours}.bias"] = w(f"{theirs}.weight", transpose), w(f"{theirs}.bias")


def _qkv(out: dict[str, Tensor], ours: str, w: _Weights, q: str, k: str, v: str) -> None:
    out[f"{ours}.in_proj.weight"] = w.cat([f"{q}.weight", f"{k}.weight", f"{v}.weight"])
    out[f"{ours}.in_proj.bias"] = w.cat([f"{q}.bias", f"{k}.bias", f"{v}.bias"])


def _marian_weights(cfg: ModelConfig, w: _Weights) -> dict[str, Tensor]:
    out: dict[str, Tensor] = {}
    shared = "model.shared.weight" if w.has("model.shared.weight") else "model.encoder.embed_tokens.weight"
    out["src_embed.weight"] = w(shared)
    out["tgt_embed.weight"] = w(shared if cfg.shared_vocab else "model.decoder.embed_tokens.weight")
    out["generator.weight"] = out["tgt_embed.weight"] if cfg.tie_embeddings else w("lm_head.weight")
    zeros = torch.zeros(1, cfg.tgt_vocab_size, device=out["tgt_embed.weight"].device)
    bias = w("final_logits_bias") if w.has("final_logits_bias") else zeros
    out["generator.bias"] = bias.reshape(-1)
    for side, n in (("encoder", cfg.n_encoder_layers), ("decoder", cfg.n_decoder_layers)):
        for i in range(n):
            theirs, ours = f"model.{side}.layers.{i}", f"{side}_layers.{i}"
            attentions = [("self_attn", "self_attn")] + ([("cross_attn", "encoder_attn")] if side == "decoder" else [])
            for mine, hf_name in attentions:
                a = f"{theirs}.{hf_name}"
                _qkv(out, f"{ours}.{mine}", w, f"{a}.q_proj", f"{a}.k_proj", f"{a}.v_proj")
                _linear(out, f"{ours}.{mine}.out_proj", w, f"{a}.out_proj")
            _linear(out, f"{ours}.ffn.linear1", w, f"{theirs}.fc1")
            _linear(out, f"{ours}.ffn.linear2", w, f"{theirs}.fc2")
            norms = ["self_attn_layer_norm"] + (["encoder_attn_layer_norm"] if side == "decoder" else [])
            for j, norm in enumerate([*norms, "final_layer_norm"], start=1):
                _linear(out, f"{ours}.norm{j}", w, f"{theirs}.{norm}")
    return out


def _gpt2_weights(cfg: ModelConfig, w: _Weights) -> dict[str, Tensor]:
    out: dict[str, Tensor] = {"src_embed.weight": w("wte.weight"), "src_pos.weight": w("wpe.weight")}
    out["tgt_embed.weight"] = out["generator.weight"] = out["src_embed.weight"]
    out["tgt_pos.weight"] = out["src_pos.weight"]
    out["generator.bias"] = torch.zeros(cfg.vocab_size, device=out["src_embed.weight"].device)  # GPT-2 has none
    for i in range(cfg.n_decoder_layers):
        theirs, ours = f"h.{i}", f"decoder_layers.{i}"
        # Conv1D stores its weight as [in, out]: the transpose of a linear layer's
        _linear(out, f"{ours}.self_attn.in_proj", w, f"{theirs}.attn.c_attn", transpose=True)
        _linear(out, f"{ours}.self_attn.out_proj", w, f"{theirs}.attn.c_proj", transpose=True)
        _linear(out, f"{ours}.ffn.linear1", w, f"{theirs}.mlp.c_fc", transpose=True)
        _linear(out, f"{ours}.ffn.linear2", w, f"{theirs}.mlp.c_proj", transpose=True)
        _linear(out, f"{ours}.norm1", w, f"{theirs}.ln_1")
        _linear(out, f"{ours}.norm2", w, f"{theirs}.ln_2")
    _linear(out, "decoder_norm", w, "ln_f")
    return out


def _bert_weights(cfg: ModelConfig, w: _Weights) -> dict[str, Tensor]:
    e = "bert.embeddings"
    out: dict[str, Tensor] = {"src_embed.weight": w(f"{e}.word_embeddings.weight")}
    out["tgt_embed.weight"] = out["generator.weight"] = out["src_embed.weight"]
    out["src_pos.weight"] = out["tgt_pos.weight"] = w(f"{e}.position_embeddings.weight")
    out["segment_embed.weight"] = w(f"{e}.token_type_embeddings.weight")
    _linear(out, "embed_norm", w, f"{e}.LayerNorm")
    for i in range(cfg.n_encoder_layers):
        theirs, ours = f"bert.encoder.layer.{i}", f"encoder_layers.{i}"
        a = f"{theirs}.attention"
        _qkv(out, f"{ours}.self_attn", w, f"{a}.self.query", f"{a}.self.key", f"{a}.self.value")
        _linear(out, f"{ours}.self_attn.out_proj", w, f"{a}.output.dense")
        _linear(out, f"{ours}.norm1", w, f"{a}.output.LayerNorm")
        _linear(out, f"{ours}.ffn.linear1", w, f"{theirs}.intermediate.dense")
        _linear(out, f"{ours}.ffn.linear2", w, f"{theirs}.output.dense")
        _linear(out, f"{ours}.norm2", w, f"{theirs}.output.LayerNorm")
    _linear(out, "mlm_transform.0", w, "cls.predictions.transform.dense")
    _linear(out, "mlm_transform.2", w, "cls.predictions.transform.LayerNorm")
    bias = "cls.predictions.bias" if w.has("cls.predictions.bias") else "cls.predictions.decoder.bias"
    out["generator.bias"] = w(bias)
    if cfg.n_classes:  # BERT's next-sentence head
        _linear(out, "pooler", w, "bert.pooler.dense")
        _linear(out, "classifier", w, "cls.seq_relationship")
    return out


# names a file may hold that this engine recomputes or ties: position tables, tied copies, attention buffers
_IGNORED = re.compile(
    r"(model\.(encoder|decoder)\.embed_(positions|tokens)\.weight|lm_head\.weight|.*attn\.(masked_)?bias"
    r"|.*position_ids|cls\.predictions\.decoder\.(weight|bias)|bert\.pooler\..*|cls\.seq_relationship\..*)"
)


def convert_weights(model_type: str, cfg: ModelConfig, hf: dict[str, Tensor], where: str) -> dict[str, Tensor]:
    """This engine's state dict from a Hugging Face one, every tensor checked against the shape ``cfg`` needs."""
    if model_type == "gpt2":
        hf = _strip_prefix(hf, "transformer.")
    elif model_type == "bert":
        hf = _strip_prefix(hf, "")
    w = _Weights(hf, where)
    convert = {"marian": _marian_weights, "gpt2": _gpt2_weights, "bert": _bert_weights}[model_type]
    ours = convert(cfg, w)
    unused = w.unused(lambda n: _IGNORED.fullmatch(n) is not None)
    if unused:
        shown = ", ".join(unused[:5]) + (f" and {len(unused) - 5} more" if len(unused) > 5 else "")
        raise HFImportError(f"{where}: weights this program does not know: {shown}; the architecture is not supported")
    _NAMES[id(ours)] = w.names
    return ours


_NAMES: dict[int, dict[int, str]] = {}  # id of a converted state dict → the file's names of its tensors


def load_into(model: Transformer, weights: dict[str, Tensor], where: str) -> None:
    """Put ``weights`` (from :func:`convert_weights`) into ``model`` without copying them, after checking
    every shape against the model's; the tied matrices stay tied."""
    check_shapes(weights, {k: tuple(v.shape) for k, v in model.state_dict().items()}, where)
    model.load_state_dict(weights, assign=True)
    model.tie_weights()


def check_shapes(weights: dict[str, Tensor], expected: Mapping[str, tuple[int, ...]], where: str) -> None:
    """Every tensor ``expected`` names must be in ``weights`` (from :func:`convert_weights`) with its shape."""
    names = _NAMES.pop(id(weights), {})
    for name, shape in expected.items():
        if name not in weights:
            raise HFImportError(f"{where}: no weight for {name}; the file is not a complete model")
        got = weights[name]
        if tuple(got.shape) != tuple(shape):
            raise HFImportError(
                f"{where}: the weight {names.get(id(got), name)} has shape {list(got.shape)}, but its "
                f"config.json implies {list(shape)}; the weights and the configuration do not belong together "
                "(download the model again)"
            )


# -- what a session is built from -------------------------------------------------------------------------------
# Fine-tuning settings for a pretrained model: a small constant rate after a short warm-up (the paper's Noam
# rate, meant for weights that start random, would undo what the model knows in a few steps).
FINE_TUNE: dict[str, Any] = dict(schedule="constant", lr=3e-5, warmup_steps=100, batch_size=16)


@contextmanager
def without_initialisation() -> Iterator[None]:
    """Build modules without drawing their random initial weights (they are all replaced by the file's):
    for a 77M-parameter model that drawing takes longer than reading the weights."""
    names = ("kaiming_uniform_", "uniform_", "normal_", "xavier_uniform_", "zeros_", "ones_")
    saved = {name: getattr(torch.nn.init, name) for name in names}
    try:
        for name in names:
            setattr(torch.nn.init, name, lambda tensor, *args, **kwargs: tensor)
        yield
    finally:
        for name, function in saved.items():
            setattr(torch.nn.init, name, function)


def _default_data(model_type: str, name: str, src_tok: Any) -> DataSpec:
    """What a fine-tune trains on unless the person chooses: the HSK pairs in the model's direction, or the
    HSK sentences of its language."""
    from model.data import DataSpec

    if model_type == "marian":
        return DataSpec(task="hsk-zh-en" if re.search(r"zh-en|zh_en", name) else "hsk-en-zh")
    chinese = src_tok.encode_ids("我们") and src_tok.unk_id not in src_tok.encode_ids("我们")
    return DataSpec(task="text-hsk-zh" if chinese and model_type == "bert" else "text-hsk-en")


def read_model(folder: Path, config: dict[str, Any], specials: dict[str, int]) -> tuple[ModelConfig, dict[str, Tensor]]:
    """The configuration and this engine's state dict of the model in ``folder`` (``config``: its config.json;
    ``specials``: the tokenizer's pad/bos/eos ids).

    The configuration is checked against the shapes the weight files' headers give before any tensor is read
    (the conversion runs once on empty ``meta`` tensors), so a config.json that lies allocates nothing.
    """
    where, model_type = str(folder), config["model_type"]
    files = WeightFiles(folder)
    n_classes = 2 if model_type == "bert" and any(k.endswith("seq_relationship.weight") for k in files.stored) else 0
    cfg = model_config(config, where, specials, n_classes)
    check_shapes(convert_weights(model_type, cfg, files.planned(), where), weight_shapes(cfg), where)
    return cfg, convert_weights(model_type, cfg, files.read(), where)


Progress = Callable[[str, float], None]  # (what is being done, fraction done 0…1)


@dataclass(frozen=True)
class FolderModel:
    """The model in a Hugging Face folder, read and checked: what a session on it is built from
    (:meth:`model.session.Session.load`)."""

    where: str  # the folder, as messages name it
    model_cfg: ModelConfig
    weights: dict[str, Tensor]  # this engine's state dict (see convert_weights), to put in with load_into
    src_tok: Any
    tgt_tok: Any
    train_cfg: TrainConfig  # the fine-tuning settings (FINE_TUNE)
    data_spec: DataSpec  # what a fine-tune trains on unless the person chooses
    name: str  # config.json's _name_or_path, else the folder's name
    origin: dict[str, Any]  # where it came from, for the session's notes


def _cached_repo_id(folder: Path) -> str | None:
    """``owner/name`` for a snapshot folder of the Hub cache (``models--owner--name/snapshots/COMMIT``), whose own
    name is a commit hash."""
    repo = folder.parent.parent.name
    if folder.parent.name == "snapshots" and repo.startswith("models--"):
        return repo.removeprefix("models--").replace("--", "/")
    return None


def read_folder(folder: str | Path, progress: Progress | None = None) -> FolderModel:
    """The model in ``folder``, its configuration, weights and tokenizers checked; raises :class:`HFImportError`.

    ``progress`` (optional) is called with what is being done and the fraction done, from the calling thread.
    """
    report = progress or (lambda what, done: None)
    from model.hf.tokenizers import HFTokenizerError, load_folder_tokenizers
    from model.training.config import TrainConfig

    folder = Path(folder).expanduser()
    where = str(folder)
    config = read_config(folder)
    model_type = config["model_type"]
    report("reading the tokenizers", 0.02)
    try:
        src_tok, tgt_tok = load_folder_tokenizers(folder, model_type)
    except HFTokenizerError as exc:
        raise HFImportError(str(exc)) from None
    specials = {"pad": tgt_tok.pad_id, "bos": tgt_tok.bos_id, "eos": tgt_tok.eos_id}
    report("reading the weights", 0.1)
    cfg, weights = read_model(folder, config, specials)
    _check_tokenizers(cfg, src_tok, tgt_tok, where)
    name = str(config.get("_name_or_path") or _cached_repo_id(folder) or folder.name)
    origin = {
        "model_type": model_type,
        "name": name,
        "folder": str(folder.resolve()),
        "architectures": list(config.get("architectures") or []),
    }
    train_cfg = TrainConfig(**FINE_TUNE)
    data_spec = _default_data(model_type, name, src_tok)
    return FolderModel(where, cfg, weights, src_tok, tgt_tok, train_cfg, data_spec, name, origin)


def _check_tokenizers(cfg: ModelConfig, src_tok: Any, tgt_tok: Any, where: str) -> None:
    """The tokenizers must fit the model: no id beyond its vocabulary, the same padding and end tokens."""
    for side, tok, size in (("source", src_tok, cfg.src_vocab_size), ("target", tgt_tok, cfg.tgt_vocab_size)):
        if tok.vocab_size > size:
            raise HFImportError(
                f"{where}: the {side} tokenizer has {tok.vocab_size} tokens but the model only {size}; "
                f"the tokenizer files belong to another model"
            )
    if (tgt_tok.pad_id, tgt_tok.eos_id) != (cfg.pad_id, cfg.eos_id):
        raise HFImportError(
            f"{where}: the tokenizer's padding/end tokens ({tgt_tok.pad_id}, {tgt_tok.eos_id}) differ from "
            f"config.json's ({cfg.pad_id}, {cfg.eos_id}); the tokenizer files belong to another model"
        )
