"""A Hugging Face folder opened as a session: it translates, steps, inspects, converts to a checkpoint that
trains and resumes like any other, and the command-line tools take the folder directly.

The folder is a small Marian model with random weights and SentencePiece tokenizers trained on the HSK
sentences (bench.hf_open writes it, as for the opening benchmark).
"""

from __future__ import annotations

import json
import shutil

import pytest
import torch

pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")

from bench.hf_open import QUICK, write_marian_folder  # noqa: E402
from model.cli import convert, evaluate, fill_mask, generate, translate  # noqa: E402
from model.hf.folders import HFImportError  # noqa: E402
from model.io.checkpoint import CheckpointError  # noqa: E402
from model.session import Session, whole_words  # noqa: E402
from tests.hf_folders import bert_folder, gpt2_folder  # noqa: E402

SENTENCE = "My cat is cute."


@pytest.fixture(scope="module")
def marian(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hf") / "opus-mt-en-zh"
    write_marian_folder(folder, QUICK)
    (folder / "model.safetensors").unlink()  # the older format only: pytorch_model.bin
    return folder


def test_a_folder_opens_as_a_translator_with_the_models_own_special_ids(marian):
    steps = []
    session = Session.load(marian, device="cpu", progress=lambda what, done: steps.append((what, done)))
    cfg = session.model_cfg
    assert (cfg.arch, cfg.pad_id, cfg.bos_id, cfg.eos_id) == ("encoder_decoder", 5000, 5000, 0)
    assert (cfg.sinusoid_layout, cfg.activation, cfg.scale_embedding) == ("split", "silu", True)
    assert session.notes["origin"]["model_type"] == "marian" and session.preset == "opus-mt-en-zh"
    assert session.data_spec.task == "hsk-en-zh" and session.train_cfg.schedule == "constant"
    assert [w for w, _ in steps][0] == "reading the tokenizers" and steps[-1] == ("ready", 1.0)
    assert [d for _, d in steps] == sorted(d for _, d in steps)
    src = session.src_tok.encode_ids(SENTENCE) + [0]  # Marian's sources end with </s> (id 0)
    ids, _ = session._source(SENTENCE)[1:]
    assert ids == src
    result = session.translate(SENTENCE, beam_size=3)
    assert isinstance(result.text, str)
    inspection = session.inspect(SENTENCE)
    assert inspection.tgt_tokens[0] == "<pad>"  # the decoder starts from the padding token
    assert inspection.cross.shape[:2] == (2, 4)  # layers, heads


def test_beam_search_steps_to_the_end_on_a_folder_model(marian):
    session = Session.load(marian, device="cpu")
    stepper = session.stepper(SENTENCE, beam_size=4, max_len=8).stepper
    while not stepper.at_end:
        stepper.step()
    assert stepper.history and stepper.history[-1].kept


def test_convert_writes_a_checkpoint_that_computes_the_same_and_fine_tunes(marian, tmp_path, capsys):
    out = tmp_path / "opus.ckpt"
    assert convert.main([str(marian), str(out)]) == 0
    assert "marian" in capsys.readouterr().out
    folder, ckpt = Session.load(marian, device="cpu"), Session.load(out, device="cpu")
    assert ckpt.model_cfg == folder.model_cfg and ckpt.notes["origin"] == folder.notes["origin"]
    src = torch.tensor([folder._source(SENTENCE)[1]])
    tgt = torch.tensor([[5000, 7, 8, 9]])
    with torch.no_grad():
        torch.testing.assert_close(ckpt.model.eval()(src, tgt), folder.model.eval()(src, tgt), atol=0, rtol=0)
    assert ckpt.src_tok.encode_ids("我们 like tea") == folder.src_tok.encode_ids("我们 like tea")
    before = {k: v.clone() for k, v in ckpt.model.state_dict().items()}
    ckpt.with_train_config(batch_size=4, eval_every=0)
    records = ckpt.train_steps(2)
    assert len(records) == 2 and all(torch.isfinite(torch.tensor(r.loss)) for r in records)
    assert any(not torch.equal(before[k], v) for k, v in ckpt.model.state_dict().items())
    ckpt.save(out)
    again = Session.load(out, device="cpu")
    assert again.step == 2 and again.notes["origin"]["name"] == "opus-mt-en-zh"


def test_command_line_tools_take_the_folder(marian, capsys):
    assert translate.main(["--checkpoint", str(marian), SENTENCE]) == 0
    assert capsys.readouterr().out.strip()
    assert evaluate.main(["--checkpoint", str(marian), "--max-sentences", "3", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["sentences"] == 3 and "bleu" in result


def test_missing_tokenizer_files_and_bad_folders_are_refused_with_names(marian, tmp_path, capsys):
    broken = tmp_path / "no-vocab"
    shutil.copytree(marian, broken)
    (broken / "vocab.json").unlink()
    with pytest.raises(HFImportError, match="vocab.json"):
        Session.load(broken, device="cpu")
    with pytest.raises(CheckpointError, match="not a model folder"):
        Session.load(tmp_path, device="cpu")
    assert convert.main([str(tmp_path / "nowhere"), str(tmp_path / "x.ckpt")]) == 2
    assert "is not a folder" in capsys.readouterr().err
    assert not (tmp_path / "x.ckpt").exists()


def test_gpt2_and_bert_folders_generate_fill_masks_convert_and_fine_tune(tmp_path, capsys):
    gpt2, bert = gpt2_folder(tmp_path), bert_folder(tmp_path)
    assert generate.main(["--checkpoint", str(gpt2), "--max-new-tokens", "5", "the teacher"]) == 0
    assert capsys.readouterr().out.startswith("the teacher")
    session = Session.load(bert, device="cpu")
    assert (session.model_cfg.pad_id, session.model_cfg.bos_id, session.model_cfg.eos_id) == (0, 101, 102)
    assert session.data_spec.task == "text-hsk-zh"  # its vocabulary has Chinese
    typed, written = session.fill_mask("the teacher [MASK] a book ."), session.fill_mask("the teacher <mask> a book .")
    assert typed.tokens == written.tokens and "[MASK]" in typed.tokens
    assert [(p.position, p.tokens) for p in typed.predictions] == [(p.position, p.tokens) for p in written.predictions]
    assert len(typed.predictions) == 1
    words = whole_words(session.src_tok)
    assert "teacher" in words and not any(w.startswith(("[", "##")) for w in words)
    assert fill_mask.main(["--checkpoint", str(bert), "--top-k", "2", "the teacher [MASK] a book ."]) == 0
    for folder in (gpt2, bert):
        out = tmp_path / f"{folder.name}.ckpt"
        assert convert.main([str(folder), str(out)]) == 0
        ckpt = Session.load(out, device="cpu")
        ckpt.with_train_config(batch_size=4, eval_every=0)
        records = ckpt.train_steps(2)
        assert all(torch.isfinite(torch.tensor(r.loss)) for r in records)
        assert ckpt.model.generator.weight is ckpt.model.tgt_embed.weight  # still tied after loading
