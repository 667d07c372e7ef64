"""Tiny Hugging Face model folders made on the spot, without the internet: for tests that open one.

Each builder writes what ``save_pretrained`` writes for a randomly initialised model of the real architecture
(config.json, model.safetensors) and for its tokenizer, trained here on a few hundred sentences of the
teaching grammar:

- :func:`gpt2_folder`: a ``GPT2LMHeadModel`` with a byte-level BPE tokenizer (``tokenizer.json``) whose last id
  is ``<|endoftext|>``, GPT-2's start, end and padding token;
- :func:`bert_folder`: a ``BertForMaskedLM`` with a WordPiece ``vocab.txt`` in BERT's layout and its
  ``tokenizer.json``;
- :func:`marian_folder`: a ``MarianMTModel`` (an ``opus-mt``-style translator: post-LN, ``swish``, scaled
  embeddings shared by the encoder, the decoder and the output layer) with a SentencePiece model saved as
  ``source.spm`` and ``target.spm`` and a ``vocab.json`` in Marian's layout (``</s>`` 0, ``<unk>`` 1, the
  pieces, ``<pad>`` last).

Tests that use them skip where ``transformers`` (a test dependency) is not installed::

    hf_folders = pytest.importorskip("tests.hf_folders")  # or: from tests.hf_folders import gpt2_folder
"""

from __future__ import annotations

import io
import json
import warnings
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")


def grammar_lines(side: str = "both", n: int = 300) -> list[str]:
    """``n`` sentence pairs of the teaching grammar: their English, their Chinese, or both (one per line)."""
    from model.data import DataSpec, load_corpus

    pairs = load_corpus(DataSpec(task="grammar-en-zh")).train[:n]
    english, chinese = [s for s, _ in pairs], [t for _, t in pairs]
    return {"en": english, "zh": chinese}.get(side, english + chinese)


def _byte_level_bpe(lines: list[str], vocab_size: int):
    """A GPT-2-style tokenizer: byte-level BPE over ``vocab_size - 1`` pieces, then ``<|endoftext|>`` last."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - 1, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tok.train_from_iterator(lines, trainer)
    tok.add_special_tokens(["<|endoftext|>"])
    return tok


def gpt2_folder(
    root: Path,
    name: str = "tiny-gpt2",
    vocab_size: int = 320,
    seed: int = 0,
    shape: tuple[int, int, int, int] = (2, 3, 24, 64),
) -> Path:
    """A GPT-2 folder: ``shape`` = (layers, heads, d_model, positions), by default 2 layers, 3 heads, d_model 24
    and 64 positions; the tokenizer's last id ends a text."""
    import torch

    folder = Path(root) / name
    tok = _byte_level_bpe(grammar_lines("en"), vocab_size)
    v = tok.get_vocab_size()  # the data may allow fewer merges than asked for
    end = v - 1
    assert tok.token_to_id("<|endoftext|>") == end
    torch.manual_seed(seed)
    layers, heads, width, positions = shape
    config = transformers.GPT2Config(
        vocab_size=v,
        n_embd=width,
        n_layer=layers,
        n_head=heads,
        n_positions=positions,
        bos_token_id=end,
        eos_token_id=end,
    )
    transformers.GPT2LMHeadModel(config).save_pretrained(folder)
    fast = transformers.GPT2TokenizerFast(
        tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>", unk_token="<|endoftext|>"
    )
    fast.save_pretrained(folder)
    return folder


def _sentencepiece_model(lines: list[str], vocab_size: int) -> bytes:
    """A SentencePiece unigram model trained on ``lines`` (a second or so)."""
    import sentencepiece

    out = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=out,
        vocab_size=vocab_size,
        character_coverage=1.0,
        model_type="unigram",
        hard_vocab_limit=False,
        minloglevel=2,
    )
    return out.getvalue()


def _marian_vocab(spm: bytes) -> dict[str, int]:
    """Marian's vocab.json for one SentencePiece model: ``</s>`` 0, ``<unk>`` 1, the pieces, ``<pad>`` last."""
    import sentencepiece

    sp = sentencepiece.SentencePieceProcessor(model_proto=spm)
    vocab = {"</s>": 0, "<unk>": 1}
    for i in range(sp.get_piece_size()):
        if not (sp.is_control(i) or sp.is_unknown(i)):
            vocab.setdefault(sp.id_to_piece(i), len(vocab))
    vocab["<pad>"] = len(vocab)
    return vocab


def marian_folder(
    root: Path, name: str = "opus-mt-en-zh", vocab_size: int = 400, seed: int = 0, spread: float = 0.0
) -> Path:
    """An opus-mt-style Marian folder (2 + 2 layers, d_model 24, 3 heads, d_ff 40, swish, scaled embeddings) with
    one SentencePiece model for both languages, as source.spm and target.spm, and its vocab.json.

    ``spread``: noise of this standard deviation added to every weight (transformers' initial weights, std 0.02,
    give nearly uniform attention and predictions; 0.5 gives a random model with visible preferences)."""
    import torch

    folder = Path(root) / name
    folder.mkdir(parents=True)
    spm = _sentencepiece_model(grammar_lines("both"), vocab_size)
    vocab = _marian_vocab(spm)
    for side in ("source", "target"):
        (folder / f"{side}.spm").write_bytes(spm)
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    with warnings.catch_warnings():  # "Recommended: pip install sacremoses" (punctuation our tokenizer leaves as is)
        warnings.simplefilter("ignore", UserWarning)
        tokenizer = transformers.MarianTokenizer(
            vocab=str(folder / "vocab.json"),
            source_spm=str(folder / "source.spm"),
            target_spm=str(folder / "target.spm"),
            source_lang="en",
            target_lang="zh",
        )
    tokenizer.save_pretrained(folder)  # tokenizer_config.json (and the files above, as MarianTokenizer writes them)
    v, pad = len(vocab), vocab["<pad>"]
    torch.manual_seed(seed)
    config = transformers.MarianConfig(
        vocab_size=v,
        d_model=24,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=3,
        decoder_attention_heads=3,
        encoder_ffn_dim=40,
        decoder_ffn_dim=40,
        activation_function="swish",
        scale_embedding=True,
        pad_token_id=pad,
        eos_token_id=0,
        decoder_start_token_id=pad,
        forced_eos_token_id=0,
        max_position_embeddings=64,
        architectures=["MarianMTModel"],
    )
    model = transformers.MarianMTModel(config)
    if spread:
        with torch.no_grad():
            for name_, p in model.named_parameters():
                if "embed_positions" not in name_:  # the sinusoid table is fixed
                    p.add_(torch.randn(p.shape) * spread)
    model.save_pretrained(folder)
    return folder


def bert_folder(root: Path, name: str = "tiny-bert", seed: int = 0) -> Path:
    """A BertForMaskedLM folder (2 layers, d_model 24, 3 heads, d_ff 40, 64 positions) with a lower-casing
    WordPiece vocabulary in BERT's layout: [PAD] 0, [unused0…98], [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103,
    then the pieces trained on the grammar's English and Chinese."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    folder = Path(root) / name
    folder.mkdir(parents=True)
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(grammar_lines(), trainers.WordPieceTrainer(vocab_size=600, show_progress=False))
    rows = ["[PAD]"] + [f"[unused{i}]" for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    rows += [piece for piece, _ in sorted(tok.get_vocab().items(), key=lambda kv: kv[1]) if piece not in rows]
    (folder / "vocab.txt").write_text("\n".join(rows) + "\n", encoding="utf-8")
    transformers.BertTokenizerFast.from_pretrained(str(folder)).save_pretrained(folder)  # tokenizer.json
    torch.manual_seed(seed)
    config = transformers.BertConfig(
        vocab_size=len(rows),
        hidden_size=24,
        num_hidden_layers=2,
        num_attention_heads=3,
        intermediate_size=40,
        max_position_embeddings=64,
    )
    transformers.BertForMaskedLM(config).save_pretrained(folder)
    return folder


def not_a_model_folder(root: Path) -> Path:
    """A folder with files, none of them a model's."""
    folder = Path(root) / "holiday-photos"
    folder.mkdir(parents=True)
    (folder / "notes.txt").write_text("not a model\n", encoding="utf-8")
    return folder


def unsupported_model_folder(root: Path) -> Path:
    """A model folder of a kind this program does not open (a T5's config.json)."""
    folder = Path(root) / "t5-small"
    folder.mkdir(parents=True)
    config = {"model_type": "t5", "architectures": ["T5ForConditionalGeneration"], "d_model": 24}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder
