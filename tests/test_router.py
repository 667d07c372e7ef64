"""The Router tab of the Attention panel (explorer/panels/router.py): each expert's load and the chosen cells of a
routing, a layer named by its stack where the model has two, the router's probabilities drawn as they are with the
chosen experts outlined, and a caption with k of N and the experts that got no token."""

from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from explorer.i18n import language  # noqa: E402
from explorer.panels.router import RouterPage, chosen_cells, expert_loads, sentences  # noqa: E402
from model.io.snapshots import RouterView  # noqa: E402

PROBS = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6], [0.5, 0.4, 0.1]])


def routed(stack: str, layer: int, chosen, weights=None) -> RouterView:
    chosen = np.asarray(chosen)
    weights = np.take_along_axis(PROBS, chosen, 1) if weights is None else np.asarray(weights)
    return RouterView(stack, layer, ["a", "b", "c"], PROBS, chosen, weights)


def test_each_experts_load_counts_the_tokens_sent_to_it():
    view = routed("decoder", 0, [[0, 2], [2, 1], [0, 2]])
    assert expert_loads(view).tolist() == [2, 1, 3]
    assert expert_loads(routed("decoder", 0, [[0], [0], [0]])).tolist() == [3, 0, 0]  # none for E2, E3


def test_the_chosen_cells_are_each_tokens_experts_token_by_token():
    view = routed("decoder", 0, [[0, 2], [2, 1], [0, 2]])
    assert chosen_cells(view).tolist() == [[0, 0], [0, 2], [1, 2], [1, 1], [2, 0], [2, 2]]


def test_sentences_are_joined_by_a_space_in_english_and_by_nothing_in_chinese():
    assert sentences("One.", "", "Two.") == "One. Two."
    language.set("zh")
    try:
        assert sentences("一。", "", "二。") == "一。二。"
    finally:
        language.set("en")


@pytest.fixture
def page(qtbot):
    p = RouterPage()
    qtbot.addWidget(p)
    return p


def inspection(arch: str, *routing: RouterView) -> SimpleNamespace:
    """An inspection as the page reads it: the model's family and its routing."""
    return SimpleNamespace(arch=arch, routing=routing)


def layers(page) -> list[str]:
    return [page.layer.itemText(i) for i in range(page.layer.count())]


def test_nothing_shown_says_what_to_do(page, english):
    page.show_inspection(None)
    assert page.shown() is None and page.heatmap.values.size == 0
    assert page.caption.text() == "Show a sentence: the router's choices for its tokens appear here."


def test_the_layers_are_named_by_their_stack_and_the_one_chosen_stays(page, english):
    two = inspection("encoder_decoder", routed("encoder", 1, [[0], [2], [0]]), routed("decoder", 1, [[0], [2], [0]]))
    page.show_inspection(two)
    assert layers(page) == ["Encoder, layer 2", "Decoder, layer 2"]
    page.layer.setCurrentIndex(1)
    page.show_inspection(two)  # another input, the same layers
    assert page.shown().stack == "decoder"
    page.show_inspection(inspection("encoder_decoder", routed("decoder", 0, [[0], [2], [0]])))  # one stack
    assert layers(page) == ["Layer 1"]
    page.show_inspection(inspection("decoder_only", routed("decoder", 0, [[0], [2], [0]])))
    assert layers(page) == ["Layer 1"] and "Layer 1" in page.heatmap.title.text()


def test_the_probabilities_are_drawn_as_they_are_and_the_chosen_experts_outlined(page, english):
    view = routed("decoder", 0, [[0], [2], [0]])
    page.show_inspection(inspection("decoder_only", view))
    assert np.array_equal(page.heatmap.values, PROBS)
    assert page.heatmap.rows == ["a", "b", "c"] and page.heatmap.cols == ["E1", "E2", "E3"]
    assert page.heatmap.outlined.tolist() == [[0, 0], [1, 2], [2, 0]]


def test_the_caption_says_k_of_n_each_experts_load_and_the_idle_ones(page, english):
    page.show_inspection(inspection("decoder_only", routed("decoder", 0, [[0], [2], [0]])))
    text = page.caption.text()
    assert "Here k = 1 of N = 3 experts." in text and "Switch Transformer" in text
    assert "Tokens each expert got from this input (3 tokens × k = 3): E1: 2 · E2: 0 · E3: 1." in text
    assert text.endswith("1 expert(s) got none: they learn nothing from this input.")
    page.show_inspection(inspection("decoder_only", routed("decoder", 0, [[0, 1], [2, 1], [0, 2]])))
    text = page.caption.text()
    assert "Here k = 2 of N = 3 experts." in text and "GShard" in text
    assert "(3 tokens × k = 6): E1: 2 · E2: 2 · E3: 2." in text and "got none" not in text
