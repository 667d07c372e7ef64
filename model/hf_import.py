"""Open a Hugging Face model folder (Marian ``opus-mt-*``, GPT-2, BERT) in this project's engine.

A folder as ``save_pretrained`` writes it or ``huggingface-cli download NAME --local-dir DIR`` fetches it:
``config.json``, the weights (``model.safetensors``, sharded safetensors, or ``pytorch_model.bin``, which is
read with ``torch.load(weights_only=True)`` so that a file carrying Python objects cannot run code), and the
tokenizer files (see :mod:`model.hf_tokenizers`). The architecture is mapped onto :class:`ModelConfig`
(Marian: the paper's post-LN encoder–decoder with sines and cosines in split halves, SiLU, √d-scaled shared
embeddings, ``final_logits_bias`` as the output bias, the padding token as the decoder's start; GPT-2: a pre-LN
decoder-only stack with learned positions and a final norm, tanh-GELU, Conv1D weights transposed into linears;
BERT: a post-LN encoder-only stack with token-type embeddings, an embedding LayerNorm and the masked-LM head),
and every weight is checked against the shape the configuration implies before anything is built.

``transformers`` itself is not needed at run time. Anything else (another ``model_type`` or architecture, a
missing or mis-shaped weight, missing tokenizer files, a folder that holds no model) is refused with a
:class:`HFImportError` that names what was found and what is supported; nothing half-loaded stays behind.
"""

from __future__ import annotations

import json
import pickle
import re
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from model.checkpoint import CheckpointError
from model.config import ModelConfig
from model.plain_data import ConfigError

if TYPE_CHECKING:
    from collections.abc import Iterator

    from model.session import Session
    from model.transformer import Transformer

SUPPORTED = {
    "marian": ("MarianMTModel",),
    "gpt2": ("GPT2LMHeadModel", "GPT2Model"),
    "bert": ("BertForMaskedLM", "BertForPreTraining"),
}
SUPPORTED_TEXT = (
    "Marian translation models (opus-mt-*: MarianMTModel), GPT-2 (GPT2LMHeadModel) and BERT (BertForMaskedLM)"
)
ACTIVATIONS = {"swish": "silu", "silu": "silu", "gelu": "gelu", "relu": "relu", "gelu_new": "gelu_tanh",
               "gelu_pytorch_tanh": "gelu_tanh", "gelu_fast": "gelu_tanh"}  # fmt: skip
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")


class HFImportError(CheckpointError):
    """A Hugging Face folder that cannot be opened, with what was found and what to do."""


def is_model_folder(path: str | Path) -> bool:
    """Whether ``path`` is a folder (the caller then opens it as a Hugging Face model folder)."""
    return Path(path).is_dir()


def read_config(folder: Path) -> dict[str, Any]:
    """``config.json`` as a dict; refuses a folder without one, or with an unsupported model."""
    path = folder / "config.json"
    if not path.is_file():
        found = sorted(p.name for p in folder.iterdir())[:8] if folder.is_dir() else []
        raise HFImportError(
            f"{folder}: not a model folder (no config.json; found {', '.join(found) or 'nothing'}). Open a folder "
            f"downloaded with huggingface-cli download NAME --local-dir DIR, or saved with save_pretrained."
        )
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise HFImportError(f"{path}: cannot be read as JSON ({exc})") from None
    if not isinstance(config, dict):
        raise HFImportError(f"{path}: is not a table of settings")
    model_type = config.get("model_type")
    if model_type not in SUPPORTED:
        raise HFImportError(
            f"{folder}: model_type {model_type!r} is not supported; this program opens {SUPPORTED_TEXT}."
        )
    architectures = config.get("architectures") or [SUPPORTED[model_type][0]]
    if not any(a in SUPPORTED[model_type] for a in architectures):
        raise HFImportError(
            f"{folder}: architecture {', '.join(map(str, architectures))} is not supported for {model_type}; "
            f"this program opens {', '.join(SUPPORTED[model_type])} (a model with its language-model head)."
        )
    return config


# -- the configuration -------------------------------------------------------------------------------------
def _activation(name: Any, where: str) -> str:
    if name not in ACTIVATIONS:
        raise HFImportError(f"{where}: activation {name!r} is not supported; supported: {sorted(ACTIVATIONS)}")
    return ACTIVATIONS[name]


def _marian_config(c: dict[str, Any], where: str) -> dict[str, Any]:
    for a, b in (("encoder_attention_heads", "decoder_attention_heads"), ("encoder_ffn_dim", "decoder_ffn_dim")):
        if c.get(a) != c.get(b):
            raise HFImportError(f"{where}: {a} ({c.get(a)}) differs from {b} ({c.get(b)}); not supported")
    if c.get("normalize_before") or c.get("add_final_layer_norm") or c.get("normalize_embedding"):
        raise HFImportError(f"{where}: a pre-LN or embedding-normalised Marian model is not supported")
    vocab = c["vocab_size"]
    shared = bool(c.get("share_encoder_decoder_embeddings", True))
    pad = c.get("pad_token_id", vocab - 1)
    return dict(
        arch="encoder_decoder", src_vocab_size=vocab, tgt_vocab_size=c.get("decoder_vocab_size") or vocab,
        shared_vocab=shared, tie_embeddings=bool(c.get("tie_word_embeddings", True)), d_model=c["d_model"],
        n_heads=c["encoder_attention_heads"], n_encoder_layers=c["encoder_layers"],
        n_decoder_layers=c["decoder_layers"], d_ff=c["encoder_ffn_dim"], max_len=c["max_position_embeddings"],
        activation=_activation(c.get("activation_function", "swish"), where), positional="sinusoidal",
        sinusoid_layout="split", scale_embedding=bool(c.get("scale_embedding", False)), norm="post",
        dropout=float(c.get("dropout", 0.1)), pad_id=pad, bos_id=c.get("decoder_start_token_id", pad),
        eos_id=c.get("eos_token_id", 0),
    )  # fmt: skip


def _gpt2_config(c: dict[str, Any], where: str) -> dict[str, Any]:
    if not c.get("scale_attn_weights", True) or c.get("scale_attn_by_inverse_layer_idx"):
        raise HFImportError(f"{where}: GPT-2 attention without the 1/√d scale, or scaled per layer, is not supported")
    if c.get("add_cross_attention"):
        raise HFImportError(f"{where}: a GPT-2 with cross-attention is not supported")
    d = c["n_embd"]
    eos = c.get("eos_token_id", 50256)
    return dict(
        arch="decoder_only", vocab_size=c["vocab_size"], src_vocab_size=0, tgt_vocab_size=0, tie_embeddings=True,
        d_model=d, n_heads=c["n_head"],
        n_decoder_layers=c["n_layer"], n_encoder_layers=1, d_ff=c.get("n_inner") or 4 * d,
        max_len=c["n_positions"], activation=_activation(c.get("activation_function", "gelu_new"), where),
        positional="learned", scale_embedding=False, norm="pre", dropout=float(c.get("resid_pdrop", 0.1)),
        layer_norm_eps=float(c.get("layer_norm_epsilon", 1e-5)), pad_id=eos, bos_id=c.get("bos_token_id", eos),
        eos_id=eos,
    )  # fmt: skip


def _bert_config(c: dict[str, Any], where: str, specials: dict[str, int]) -> dict[str, Any]:
    if c.get("hidden_act", "gelu") != "gelu":
        raise HFImportError(f"{where}: BERT with activation {c.get('hidden_act')!r} is not supported (only gelu)")
    if c.get("position_embedding_type", "absolute") != "absolute" or c.get("type_vocab_size", 2) != 2:
        raise HFImportError(f"{where}: BERT with relative positions or other than 2 token types is not supported")
    return dict(
        arch="encoder_only", vocab_size=c["vocab_size"], src_vocab_size=0, tgt_vocab_size=0, tie_embeddings=True,
        d_model=c["hidden_size"],
        n_heads=c["num_attention_heads"], n_encoder_layers=c["num_hidden_layers"], n_decoder_layers=1,
        d_ff=c["intermediate_size"], max_len=c["max_position_embeddings"], activation="gelu",
        positional="learned", scale_embedding=False, embed_norm=True, norm="post",
        dropout=float(c.get("hidden_dropout_prob", 0.1)), layer_norm_eps=float(c.get("layer_norm_eps", 1e-12)),
        pad_id=c.get("pad_token_id", specials["pad"]), bos_id=specials["bos"], eos_id=specials["eos"],
    )  # fmt: skip


def model_config(config: dict[str, Any], where: str, specials: dict[str, int], n_classes: int = 0) -> ModelConfig:
    """The :class:`ModelConfig` of a Hugging Face ``config`` (``specials``: the tokenizer's pad/bos/eos ids,
    which BERT's config does not name)."""
    model_type = config["model_type"]
    try:
        if model_type == "marian":
            fields = _marian_config(config, where)
        elif model_type == "gpt2":
            fields = _gpt2_config(config, where)
        else:
            fields = _bert_config(config, where, specials)
    except KeyError as exc:
        raise HFImportError(f"{where}: config.json lacks {exc.args[0]!r}, which a {model_type} model needs") from None
    try:
        return ModelConfig(**fields, n_classes=n_classes)
    except ConfigError as exc:
        raise HFImportError(f"{where}: its configuration cannot be used ({exc})") from None


# -- the weights ---------------------------------------------------------------------------------------------
def read_weights(folder: Path) -> dict[str, Tensor]:
    """Every tensor of the folder's weights, by its Hugging Face name (float32, on the CPU)."""
    from safetensors.torch import load_file

    single, index, pickled = (folder / name for name in WEIGHT_FILES)
    try:
        if single.is_file():
            tensors = load_file(single)
        elif index.is_file():
            shards = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
            tensors = {}
            for shard in shards:
                tensors.update(load_file(folder / shard))
        elif pickled.is_file():
            tensors = _read_pickled(pickled)
        else:
            others = [p.name for p in folder.iterdir() if p.suffix in (".h5", ".msgpack", ".onnx", ".gguf")]
            hint = f" (found {', '.join(others)}: another framework's format)" if others else ""
            raise HFImportError(
                f"{folder}: no PyTorch weights{hint}; looked for {', '.join(WEIGHT_FILES)}. Download the "
                f"model's model.safetensors or pytorch_model.bin."
            )
    except HFImportError:
        raise
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise HFImportError(f"{folder}: its weights cannot be read ({exc})") from None
    return {k: v.float() if v.is_floating_point() else v for k, v in tensors.items()}


def _read_pickled(path: Path) -> dict[str, Tensor]:
    """A ``pytorch_model.bin``, read by PyTorch's restricted unpickler: tensors and plain data only."""
    try:
        data = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except (pickle.UnpicklingError, AttributeError, TypeError) as exc:
        raise HFImportError(
            f"{path}: refused — it holds Python objects besides weights, and opening it could run code "
            f"({str(exc).splitlines()[0][:160]}). Use the model's model.safetensors instead."
        ) from None
    if not (isinstance(data, dict) and all(isinstance(v, Tensor) for v in data.values())):
        raise HFImportError(f"{path}: is not a table of weights")
    return data


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
        value = torch.cat([self(n) for n in names])
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
    bias = w("final_logits_bias") if w.has("final_logits_bias") else torch.zeros(1, cfg.tgt_vocab_size)
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
    out["generator.bias"] = torch.zeros(cfg.vocab_size)  # GPT-2's output layer has no bias
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
    names = _NAMES.pop(id(weights), {})
    for name, expected in model.state_dict().items():
        if name not in weights:
            raise HFImportError(f"{where}: no weight for {name}; the file is not a complete model")
        got = weights[name]
        if got.shape != expected.shape:
            raise HFImportError(
                f"{where}: the weight {names.get(id(got), name)} has shape {list(got.shape)}, but its "
                f"config.json implies {list(expected.shape)}; the weights and the configuration do not belong together"
            )
    model.load_state_dict(weights, assign=True)
    model.tie_weights()


# -- the session ---------------------------------------------------------------------------------------------
# Fine-tuning settings for a pretrained model: a small constant rate after a short warm-up (the paper's Noam
# rate, meant for weights that start random, would undo what the model knows in a few steps).
FINE_TUNE: dict[str, Any] = dict(schedule="constant", lr=3e-5, warmup_steps=100, batch_size=16)


@contextmanager
def _without_initialisation() -> Iterator[None]:
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


def _default_data(model_type: str, name: str, src_tok: Any) -> Any:
    """What a fine-tune trains on unless the person chooses: the HSK pairs in the model's direction, or the
    HSK sentences of its language."""
    from model.data import DataSpec

    if model_type == "marian":
        return DataSpec(task="hsk-zh-en" if re.search(r"zh-en|zh_en", name) else "hsk-en-zh")
    chinese = src_tok.encode_ids("我们") and src_tok.unk_id not in src_tok.encode_ids("我们")
    return DataSpec(task="text-hsk-zh" if chinese and model_type == "bert" else "text-hsk-en")


def read_model(folder: Path, config: dict[str, Any], specials: dict[str, int]) -> tuple[ModelConfig, dict[str, Tensor]]:
    """The configuration and this engine's state dict of the model in ``folder`` (``config``: its config.json;
    ``specials``: the tokenizer's pad/bos/eos ids)."""
    hf = read_weights(folder)
    n_classes = 2 if config["model_type"] == "bert" and any(k.endswith("seq_relationship.weight") for k in hf) else 0
    cfg = model_config(config, str(folder), specials, n_classes)
    return cfg, convert_weights(config["model_type"], cfg, hf, str(folder))


Progress = Callable[[str, float], None]  # (what is being done, fraction done 0…1)


def open_folder(folder: str | Path, device: str = "auto", progress: Progress | None = None) -> Session:
    """A :class:`~model.session.Session` on the model in ``folder``; raises :class:`HFImportError`.

    ``progress`` (optional) is called with what is being done and the fraction done, from the calling thread.
    """
    report = progress or (lambda what, done: None)
    from model.device import resolve_device
    from model.hf_tokenizers import HFTokenizerError, load_folder_tokenizers
    from model.session import Session
    from model.tokenization import TokenizerSpec
    from model.train_config import TrainConfig

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
    report("building the model", 0.7)
    name = str(config.get("_name_or_path") or folder.name)
    target = resolve_device(device)
    with _without_initialisation():
        session = Session(
            model_cfg=cfg, train_cfg=TrainConfig(**FINE_TUNE), data_spec=_default_data(model_type, name, src_tok),
            tokenizer_spec=TokenizerSpec(), src_tok=src_tok, tgt_tok=tgt_tok, device=torch.device("cpu"),
            preset=name,
        )  # fmt: skip
    load_into(session.model, weights, where)
    session.model.to(target)
    session.device = target
    report("ready", 1.0)
    session.notes["origin"] = {"model_type": model_type, "name": name, "folder": str(folder.resolve()),
                               "architectures": list(config.get("architectures") or [])}  # fmt: skip
    return session


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
