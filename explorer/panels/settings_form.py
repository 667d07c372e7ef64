"""The settings form of the Training panel: data, tokenizer, architecture and optimisation, checked
before anything is built."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLayout,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from explorer.i18n import N_, tr
from explorer.widgets import named
from explorer.worker import NewModelSpec, RunInfo
from model.config import PRESETS, ModelConfig
from model.data import TASK_DESCRIPTIONS, TASKS, DataError, DataSpec
from model.plain_data import ConfigError, SettingField, SettingValue, form_settings
from model.tokenization import TOKENIZER_KINDS, TokenizerSpec
from model.train_config import TRAIN_PRESETS, TrainConfig

FILE_ITEM = "file"
# The Model and Training rows: the ModelConfig and TrainConfig fields whose Setting says form=True, in field order,
# each with the label, range and choices its field declares.
MODEL_SETTINGS = form_settings(ModelConfig)
TRAIN_SETTINGS = {s.name: s for s in form_settings(TrainConfig)}
ARCH_FIELDS = tuple(s.name for s in MODEL_SETTINGS)  # changing any of these needs a new model
RATE_FIELDS = ("noam_factor", "lr")  # one row, the rate the schedule uses: the Noam factor, or lr
# Shorter attribute names that the panels and tests use for some rows (form.heads, form.batch…); the others go by
# their field's name (form.d_model, form.schedule…). The rate row is form.rate.
SHORT_NAMES = {
    "n_heads": "heads", "n_encoder_layers": "enc_layers", "n_decoder_layers": "dec_layers", "tie_embeddings": "tie",
    "batch_size": "batch", "warmup_steps": "warmup", "label_smoothing": "smoothing", "clip_norm": "clip",
}  # fmt: skip


def int_spin(lo: int, hi: int, step: int = 1) -> QSpinBox:
    w = QSpinBox()
    w.setRange(lo, hi)
    w.setSingleStep(step)
    return w


def float_spin(lo: float, hi: float, step: float, decimals: int) -> QDoubleSpinBox:
    w = QDoubleSpinBox()
    w.setRange(lo, hi)
    w.setSingleStep(step)
    w.setDecimals(decimals)
    return w


Editor = QComboBox | QCheckBox | QSpinBox | QDoubleSpinBox


def setting_widget(s: SettingField) -> Editor:
    """The editor of one setting: a combo box of its choices, a check box, or a spin box over its range."""
    w: Editor
    if s.choices:
        combo = QComboBox()
        combo.addItems(list(s.choices))
        w, kind = combo, "combo"
    elif s.kind is bool:
        w, kind = QCheckBox(), "check"
    elif s.kind is int:
        w, kind = int_spin(int(s.setting.low), int(s.setting.high), int(s.setting.step)), "spin"
    else:
        w, kind = float_spin(s.setting.low, s.setting.high, s.setting.step, s.setting.decimals), "spin"
    w.setObjectName(f"{s.name}_{kind}")
    return w


def widget_value(w: Editor) -> Any:
    if isinstance(w, QComboBox):
        return w.currentText()
    if isinstance(w, QCheckBox):
        return w.isChecked()
    if isinstance(w, QDoubleSpinBox):
        return round(w.value(), w.decimals())
    return w.value()


def set_widget_value(w: Editor, value: Any) -> None:
    if isinstance(w, QComboBox):
        w.setCurrentText(value)
    elif isinstance(w, QCheckBox):
        w.setChecked(value)
    else:
        w.setValue(value)


def rate_field(schedule: str) -> str:
    """The TrainConfig field that the rate row edits under ``schedule``."""
    return "noam_factor" if schedule == "noam" else "lr"


class SettingsForm(QWidget):
    """Data, tokenizer, architecture and optimisation settings; refuses what cannot work."""

    validity_changed = Signal(bool)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.data_path: str | None = None
        self._create_data_rows()
        self._create_setting_rows()
        self._lay_out()
        self._connect()
        self.set_defaults()
        self.retranslate()
        self.edited = False  # changed by the person since the form last showed a run

    def _create_data_rows(self) -> None:
        self.task_combo = named(QComboBox(), "task_combo")
        for name in TASKS:
            self.task_combo.addItem(name, name)
        self.task_combo.addItem("", FILE_ITEM)
        self.file_label = QLabel()
        self.file_label.setWordWrap(True)
        self.browse = QPushButton()
        self.tokenizer_combo = named(QComboBox(), "tokenizer_combo")
        self.tokenizer_combo.addItems(TOKENIZER_KINDS)
        self.vocab_spin = int_spin(16, 200000, 500)
        self.preset_combo = named(QComboBox(), "preset_combo")
        self.preset_combo.addItems(list(PRESETS))
        self.error_label = named(QLabel(), "settings_error")
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet("color: #c62828")

    def _create_setting_rows(self) -> None:
        """One editor per model and training setting, and the rate row's editor and label."""
        self.model_widgets = {s.name: setting_widget(s) for s in MODEL_SETTINGS}
        self.train_widgets = {name: setting_widget(s) for name, s in TRAIN_SETTINGS.items() if name not in RATE_FIELDS}
        for name, w in {**self.model_widgets, **self.train_widgets}.items():
            setattr(self, SHORT_NAMES.get(name, name), w)
        rate = setting_widget(TRAIN_SETTINGS["lr"])  # its decimals and label follow the schedule
        schedule = self.train_widgets["schedule"]
        assert isinstance(rate, QDoubleSpinBox) and isinstance(schedule, QComboBox)
        self.rate, self.schedule = rate, schedule
        self.rate.setObjectName("rate_spin")
        self._rate_label = QLabel()

    def _lay_out(self) -> None:
        self.data_box, self.model_box, self.train_box = QGroupBox(), QGroupBox(), QGroupBox()
        self.data_form, self.model_form, self.train_form = QFormLayout(), QFormLayout(), QFormLayout()
        file_row = QHBoxLayout()
        file_row.addWidget(self.file_label, 1)
        file_row.addWidget(self.browse)
        rows: list[tuple[QFormLayout, str | None, QWidget | QLayout]] = [
            (self.data_form, N_("Task"), self.task_combo),
            (self.data_form, N_("Data file"), file_row),
            (self.data_form, N_("Tokenizer"), self.tokenizer_combo),
            (self.data_form, N_("Vocabulary size"), self.vocab_spin),
            (self.model_form, N_("Preset"), self.preset_combo),
        ]
        rows += [(self.model_form, s.setting.label, self.model_widgets[s.name]) for s in MODEL_SETTINGS]
        for name, s in TRAIN_SETTINGS.items():
            if name == RATE_FIELDS[0]:
                rows.append((self.train_form, None, self.rate))  # its label follows the schedule
            elif name not in RATE_FIELDS:
                rows.append((self.train_form, s.setting.label, self.train_widgets[name]))
        self._row_labels: list[tuple[QLabel, str]] = []
        for form, text, field in rows:
            label = self._rate_label if text is None else QLabel()
            if text is not None:
                self._row_labels.append((label, text))
            if isinstance(field, QWidget):
                form.addRow(label, field)
            else:
                form.addRow(label, field)
        for box, form in ((self.data_box, self.data_form), (self.model_box, self.model_form),
                          (self.train_box, self.train_form)):  # fmt: skip
            box.setLayout(form)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for w in (self.data_box, self.model_box, self.train_box, self.error_label):
            layout.addWidget(w)
        layout.addStretch(1)

    def _connect(self) -> None:
        self.browse.clicked.connect(self._on_browse)
        self.preset_combo.currentTextChanged.connect(self._on_preset)
        self.schedule.currentTextChanged.connect(self._on_schedule)
        self.task_combo.currentIndexChanged.connect(self._on_task)
        for slot in (self.validate, self._on_edit):
            for spin in self.findChildren(QSpinBox):
                spin.valueChanged.connect(slot)
            for dspin in self.findChildren(QDoubleSpinBox):
                dspin.valueChanged.connect(slot)
            for combo in self.findChildren(QComboBox):
                combo.currentIndexChanged.connect(slot)
            for check in self.findChildren(QCheckBox):
                check.toggled.connect(slot)

    def retranslate(self) -> None:
        self.data_box.setTitle(tr("Data"))
        self.model_box.setTitle(tr("Model"))
        self.train_box.setTitle(tr("Training"))
        self.browse.setText(tr("Choose file…"))
        for label, text in self._row_labels:
            label.setText(tr(text))
        self.task_combo.setItemText(self.task_combo.count() - 1, tr("Your file…"))
        for i, name in enumerate(TASKS):
            self.task_combo.setItemData(i, tr(TASK_DESCRIPTIONS[name]), Qt.ItemDataRole.ToolTipRole)
        self._update_file_label()
        self._show_rate_row()  # the label and decimals only: the rate itself stays as the person set it
        self.validate()

    def _on_edit(self, *_: Any) -> None:
        self.edited = True

    # -- values --------------------------------------------------------------------------------
    def set_defaults(self) -> None:
        """Every row at its field's default, then the "tiny" preset's values."""
        self.tokenizer_combo.setCurrentText(TokenizerSpec.kind)
        self.vocab_spin.setValue(TokenizerSpec.vocab_size)
        for s in MODEL_SETTINGS:
            set_widget_value(self.model_widgets[s.name], s.default)
        for name, w in self.train_widgets.items():
            set_widget_value(w, TRAIN_SETTINGS[name].default)
        self.preset_combo.setCurrentText("tiny")
        self._on_preset("tiny")
        self._on_schedule(self.schedule.currentText())  # the rate row (no signal: the schedule was already noam)

    def _on_preset(self, name: str) -> None:
        """The preset's values for the fields it names (the architecture, and batch size, warm-up, evaluation
        interval and seed); the other rows keep what the person chose."""
        if name not in PRESETS:
            return
        for field, value in PRESETS[name].items():
            if field in self.model_widgets:
                set_widget_value(self.model_widgets[field], value)
        for field, value in TRAIN_PRESETS.get(name, {}).items():
            if field in self.train_widgets:
                set_widget_value(self.train_widgets[field], value)

    def _on_schedule(self, schedule: str) -> None:
        self._show_rate_row()
        self.rate.setValue(TRAIN_SETTINGS[rate_field(schedule)].default)

    def _show_rate_row(self) -> None:
        """Label and decimals of the rate row: those of the field the schedule uses (Noam factor or rate)."""
        s = TRAIN_SETTINGS[rate_field(self.schedule.currentText())]
        self.rate.setDecimals(s.setting.decimals)
        self._rate_label.setText(tr(s.setting.label))

    def _on_task(self) -> None:
        if self.task_combo.currentData() == FILE_ITEM and not self.data_path:
            self._on_browse()
        self._update_file_label()
        self.validate()

    def _on_browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, tr("Sentence pairs"), "", tr("Sentence pairs (*.tsv *.txt *.jsonl *.json);;All files (*)")
        )
        if path:
            self.set_data_file(path)

    def set_data_file(self, path: str | None) -> None:
        self.data_path = path
        if path:
            self.task_combo.setCurrentIndex(self.task_combo.count() - 1)
        self._update_file_label()
        self.validate()

    def _update_file_label(self) -> None:
        use_file = self.task_combo.currentData() == FILE_ITEM
        self.file_label.setText(Path(self.data_path).name if (use_file and self.data_path) else
                                (tr("none chosen") if use_file else "—"))  # fmt: skip
        self.browse.setEnabled(use_file)

    def model_overrides(self) -> dict[str, SettingValue]:
        return {name: widget_value(w) for name, w in self.model_widgets.items()}

    def train_config(self) -> TrainConfig:
        """The training rows; the rate the schedule does not use, and the fields without a row, at their
        defaults, except the cosine schedule's length: at least one step past the warm-up."""
        values = {name: widget_value(w) for name, w in self.train_widgets.items()}
        values[rate_field(values["schedule"])] = self.rate.value()
        values["total_steps"] = max(TrainConfig.total_steps, values["warmup_steps"] + 1)
        return TrainConfig(**values)

    def data_spec(self) -> DataSpec:
        if self.task_combo.currentData() == FILE_ITEM:
            if not self.data_path:
                raise DataError(tr("Choose a data file, or pick one of the bundled tasks."))
            return DataSpec(task=None, path=self.data_path)
        return DataSpec(task=self.task_combo.currentData())

    def spec(self) -> NewModelSpec:
        """The settings as a model specification; raises ValueError explaining what cannot work."""
        data = self.data_spec()
        overrides = self.model_overrides()
        fields: dict[str, Any] = dict(overrides)
        ModelConfig.preset(self.preset_combo.currentText(), src_vocab_size=100, tgt_vocab_size=100, **fields)
        tokenizer = TokenizerSpec(self.tokenizer_combo.currentText(), self.vocab_spin.value())
        return NewModelSpec(data, self.preset_combo.currentText(), overrides, self.train_config(), tokenizer)

    def validate(self) -> bool:
        try:
            self.spec()
            message = ""
        except ConfigError as exc:
            message = "; ".join(exc.problems)
        except (ValueError, DataError) as exc:
            message = str(exc)
        self.error_label.setText(message)
        self.error_label.setVisible(bool(message))
        self.validity_changed.emit(not message)
        return not message

    def show_run(self, info: RunInfo) -> None:
        """Fill the form with the settings of the run that is now loaded."""
        for w in self.findChildren(QWidget):
            w.blockSignals(True)
        try:
            self._show_data(info)
            m, t = info.model_config, info.train_config
            for name, w in self.model_widgets.items():
                set_widget_value(w, getattr(m, name))
            for name, w in self.train_widgets.items():
                set_widget_value(w, getattr(t, name))
            self._show_rate_row()  # the run's schedule's decimals, before its rate
            self.rate.setValue(getattr(t, rate_field(t.schedule)))
        finally:
            for w in self.findChildren(QWidget):
                w.blockSignals(False)
        self._update_file_label()
        self.validate()
        self.edited = False

    def _show_data(self, info: RunInfo) -> None:
        d = info.data
        if d.task:
            self.task_combo.setCurrentIndex(self.task_combo.findData(d.task))
        else:
            self.data_path = d.path
            self.task_combo.setCurrentIndex(self.task_combo.count() - 1)
        self.tokenizer_combo.setCurrentText(info.tokenizer.kind)
        if info.preset in PRESETS:
            self.preset_combo.setCurrentText(info.preset)


def needs_new_model(form_spec: NewModelSpec, info: RunInfo | None) -> bool:
    """True when the form's settings cannot be applied to the loaded model."""
    if info is None:
        return True
    m = info.model_config
    if any(form_spec.model_overrides[k] != getattr(m, k) for k in ARCH_FIELDS):
        return True
    if form_spec.data != info.data:
        return True
    return form_spec.tokenizer.kind != info.tokenizer.kind
