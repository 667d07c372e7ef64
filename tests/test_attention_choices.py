"""The choices above the Attention panel's map (explorer/panels/attention_choices.py): their state as an
AttentionView, set all at once with one redraw; the kinds and the rows' names of each family; the layer and head
boxes within the model's; what is enabled on a tab that draws no map; and a typed pair asked for only with a source."""

import pytest

pytest.importorskip("pytestqt")

from explorer.panels.attention_choices import AttentionChoices  # noqa: E402
from explorer.panels.attention_view import AttentionView  # noqa: E402
from model.families.registry import DECODER_ONLY, ENCODER_DECODER, ENCODER_ONLY  # noqa: E402


@pytest.fixture
def choices(qtbot):
    from PySide6.QtWidgets import QVBoxLayout, QWidget

    c = AttentionChoices()
    host = QWidget()
    c.lay_out(QVBoxLayout(host))
    qtbot.addWidget(host)
    c.retranslate()
    c.host = host  # the widgets' parent, kept as long as the choices
    return c


def emitted(signal) -> list[int]:
    seen: list[int] = []
    signal.connect(lambda *_: seen.append(1))
    return seen


def kinds(choices) -> list[str]:
    return [choices.kind.itemData(i) for i in range(choices.kind.count())]


def test_the_choices_start_as_the_views_defaults(choices):
    assert choices.view() == AttentionView()


@pytest.mark.parametrize("family", [ENCODER_DECODER, DECODER_ONLY, ENCODER_ONLY], ids=lambda f: f.arch)
def test_each_family_is_offered_its_kinds_and_its_names_for_the_rows(choices, english, family):
    choices.set_family(family)
    choices.retranslate()
    assert kinds(choices) == list(family.attention)
    labels = family.labels
    assert choices.row_labels["src"].text() == labels.get("pair:source", "Source")
    assert choices.source.itemText(choices.source.findData("pair")) == labels.get(
        "source:pair", "A source/target pair (teacher forcing)"
    )
    has_target = "decoder" in family.stacks  # a continuation or a translation after the source
    assert choices.pair_tgt.isHidden() != has_target and choices.row_labels["tgt"].isHidden() != has_target
    if has_target:
        assert choices.row_labels["tgt"].text() == labels.get("pair:target", "Target")
        assert choices.pair_tgt.placeholderText() == labels.get(
            "pair:placeholder", "empty: the model's own translation"
        )


def test_the_kind_shown_stays_where_the_family_has_it(choices):
    choices.kind.setCurrentIndex(choices.kind.findData("cross"))
    choices.set_family(ENCODER_DECODER)
    assert choices.kind.currentData() == "cross"
    choices.set_family(ENCODER_ONLY)  # no cross-attention: its one kind
    assert choices.kind.currentData() == "encoder"
    choices.set_family(ENCODER_DECODER)
    assert choices.kind.currentData() == "encoder"


def test_a_view_is_shown_at_once_with_one_redraw_and_within_the_models_layers_and_heads(choices):
    choices.set_model(n_encoder_layers=2, n_decoder_layers=3, n_heads=4)
    changed = emitted(choices.changed)
    view = AttentionView(source="pair", kind="cross", layer=3, head=2, average=True, stretch=True)
    choices.show_view(view)
    assert choices.view() == view and len(changed) == 1
    choices.show_view(view)  # shown already: nothing to redraw
    assert len(changed) == 1
    choices.show_view(AttentionView(kind="encoder", layer=3, head=9))  # past the encoder's 2 layers and 4 heads
    assert (choices.view().layer, choices.view().head) == (2, 4) and len(changed) == 2
    choices.set_family(DECODER_ONLY)
    choices.show_view(AttentionView(kind="cross"))  # a kind the family lacks: its first
    assert choices.view().kind == "decoder_self"


def test_each_choice_redraws_the_map(choices):
    choices.set_model(2, 2, 4)
    changed = emitted(choices.changed)
    choices.kind.setCurrentIndex(choices.kind.findData("cross"))
    choices.layer.setValue(2)
    choices.head.setValue(3)
    for check in (choices.average, choices.all_heads, choices.stretch):
        check.setChecked(True)
    choices.source.setCurrentIndex(choices.source.findData("probe"))
    assert len(changed) == 7


def test_a_tab_without_maps_greys_the_maps_choices_and_the_grid_greys_the_head(choices):
    choices.enable(False)
    maps = (choices.kind, choices.layer, choices.head, choices.average, choices.all_heads, choices.stretch)
    assert not any(w.isEnabled() for w in maps) and choices.source.isEnabled()
    choices.enable(True)
    assert all(w.isEnabled() for w in maps)
    choices.average.setChecked(True)  # the heads averaged: no head to choose
    choices.enable(True)
    assert choices.average.isEnabled() and not choices.head.isEnabled()
    choices.all_heads.setChecked(True)  # every head in a grid
    choices.enable(True)
    assert not choices.average.isEnabled() and not choices.head.isEnabled() and choices.layer.isEnabled()


def test_a_pair_is_asked_for_only_with_a_source_typed(choices):
    asked = emitted(choices.pair_asked)
    choices.pair_button.click()
    choices.pair_src.setText("   ")
    choices.pair_button.click()
    assert asked == []
    choices.pair_src.setText("1 2 3")
    choices.pair_button.click()
    choices.pair_tgt.returnPressed.emit()
    assert len(asked) == 2
