"""What a translator's decoding shows its own way (explorer/panels/decoding_translation.py): its output line, the
corpus's reference, what its candidates measure, and its words for the sentence box."""

from types import SimpleNamespace

from explorer.panels.decoding_translation import TranslationMode
from model.io.snapshots import DecodeSettings


def test_the_output_line_is_the_output_so_far_until_a_translation_has_finished():
    mode = TranslationMode()
    going = SimpleNamespace(at_end=False, hypotheses=())
    assert mode.output_line(going, "le <b>chat") == ("Output so far", "<b>le &lt;b&gt;chat</b>")  # escaped
    assert mode.output_line(going, "") == ("Output so far", "<b>…</b>")  # nothing written yet
    done = SimpleNamespace(at_end=True, hypotheses=(("le chat", -0.1, -0.2, (5, 6, 2)),))
    assert mode.output_line(done, "le chat") == ("Translation", "<b>le chat</b>")
    assert mode.output_line(done, "") == ("Translation", "<b>∅</b>")  # finished empty: said so
    stopped = SimpleNamespace(at_end=True, hypotheses=())  # at the end without a finished hypothesis
    assert mode.output_line(stopped, "le") == ("Output so far", "<b>le</b>")


def test_a_translator_reads_the_source_and_compares_with_the_corpus():
    mode = TranslationMode()
    assert mode.cross_attention and not mode.prompted
    assert mode.reference(SimpleNamespace(reference="the cat")) == "the cat"
    assert mode.reference(SimpleNamespace(reference=None)) is None
    assert mode.axis(None, DecodeSettings("x")) == "P(token | prefix, source)"
    assert mode.prefix(SimpleNamespace(source_tokens=("a", "<eos>")), ["le", "chat"]) == ["le", "chat"]  # no source
    assert mode.draw_note(SimpleNamespace(sampled=False), DecodeSettings("x"), None, str) == ""
    assert mode.sentence_of("The cat sat.") == "The cat sat."  # the whole corpus sentence


def test_its_words_name_a_translation_and_the_models_length_limit():
    mode = TranslationMode()
    texts = mode.input_texts()
    assert (texts.start, texts.sample, texts.output, texts.nbest) == (
        "Decode",
        "Random test sentence",
        "Translation",
        "n-best list",
    )
    said = mode.cut_note().format(total=300, kept=255, cut=45)
    assert said == (
        "The input has 300 tokens but the model reads at most 255: only the first 255 were translated, "
        "the other 45 were ignored."
    )
    assert mode.max_len_tip().format(n=64).endswith("At most 64: the model's length limit.")
