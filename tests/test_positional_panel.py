"""The positional-encoding lab (explorer/panels/positional.py): its settings keep the typed dimensions below
d_model and follow a model's width. Its tabs have their own files: test_positional_paper.py (the paper's sinusoids
and the shift by k), test_positional_model.py (the model's own positions by kind) and test_positional_t5.py (T5's
buckets by the family's stacks); what the whole panel shows is tested with the families in
scenarios/test_families_inspecting, test_teaching_texts and test_texts_true."""

import pytest

pytest.importorskip("pytestqt")

from explorer.panels.positional_controls import LabControls  # noqa: E402


def test_the_settings_keep_the_typed_dimensions_below_d_model_and_follow_a_models_width(qtbot):
    changes = []
    controls = LabControls(lambda: changes.append(1))
    qtbot.addWidget(controls.d_model)
    controls.d_model.setValue(16)
    controls.dims.setText("3, 15 16 99 x 0")
    assert controls.chosen_dims() == [3, 15, 0]
    controls.dims.setText("20 30")
    assert controls.chosen_dims() == [0, 1]  # none below d_model: the first pair
    changes.clear()
    controls.follow_model(37)  # an odd width: the sinusoids take the next even one
    assert controls.d_model.value() == 38 and controls.even_width() == 38 and not changes
    assert controls.dims.text() == "0 4 8 18"
    controls.d_model.setValue(41)
    assert controls.even_width() == 42 and changes
