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
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from explorer.i18n import N_, tr
from explorer.worker import NewModelSpec, RunInfo
from model.config import ACTIVATIONS, NORM_KINDS, POSITIONAL_KINDS, PRESETS, ModelConfig
from model.data import TASK_DESCRIPTIONS, TASKS, DataError, DataSpec
from model.tokenization import TOKENIZER_KINDS, TokenizerSpec
from model.train_config import SCHEDULES, TRAIN_PRESETS, TrainConfig

FILE_ITEM = "file"
ARCH_FIELDS = ("d_model", "n_heads", "n_encoder_layers", "n_decoder_layers", "d_ff", "dropout", "positional", "norm",
               "activation", "tie_embeddings")  # fmt: skip


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


class SettingsForm(QWidget):
    """Data, tokenizer, architecture and optimisation settings; refuses what cannot work."""

    validity_changed = Signal(bool)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.data_path: str | None = None
        self.task_combo = QComboBox(objectName="task_combo")
        for name in TASKS:
            self.task_combo.addItem(name, name)
        self.task_combo.addItem("", FILE_ITEM)
        self.file_label = QLabel()
        self.file_label.setWordWrap(True)
        self.tokenizer_combo = QComboBox(objectName="tokenizer_combo")
        self.tokenizer_combo.addItems(TOKENIZER_KINDS)
        self.vocab_spin = int_spin(16, 200000, 500)
        self.preset_combo = QComboBox(objectName="preset_combo")
        self.preset_combo.addItems(list(PRESETS))
        self.d_model = int_spin(4, 4096, 8)
        self.heads = int_spin(1, 64)
        self.enc_layers = int_spin(1, 48)
        self.dec_layers = int_spin(1, 48)
        self.d_ff = int_spin(4, 32768, 64)
        self.dropout = float_spin(0.0, 0.95, 0.05, 2)
        self.positional = QComboBox(objectName="positional_combo")
        self.positional.addItems(POSITIONAL_KINDS)
        self.norm = QComboBox(objectName="norm_combo")
        self.norm.addItems(NORM_KINDS)
        self.activation = QComboBox()
        self.activation.addItems(ACTIVATIONS)
        self.tie = QCheckBox()
        self.batch = int_spin(1, 8192, 8)
        self.schedule = QComboBox()
        self.schedule.addItems(SCHEDULES)
        self.warmup = int_spin(0, 1000000, 100)
        self.rate = float_spin(1e-6, 100.0, 0.1, 6)
        self.smoothing = float_spin(0.0, 0.95, 0.05, 2)
        self.clip = float_spin(0.0, 1000.0, 0.5, 2)
        self.seed = int_spin(0, 2**31 - 1)
        self.eval_every = int_spin(0, 1000000, 100)
        self.error_label = QLabel(objectName="settings_error")
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet("color: #c62828")

        self.data_box, self.model_box, self.train_box = QGroupBox(), QGroupBox(), QGroupBox()
        self.data_form, self.model_form, self.train_form = QFormLayout(), QFormLayout(), QFormLayout()
        self.browse = QPushButton()
        self.browse.clicked.connect(self._on_browse)
        file_row = QHBoxLayout()
        file_row.addWidget(self.file_label, 1)
        file_row.addWidget(self.browse)
        self._rows = [
            (self.data_form, N_("Task"), self.task_combo),
            (self.data_form, N_("Data file"), file_row),
            (self.data_form, N_("Tokenizer"), self.tokenizer_combo),
            (self.data_form, N_("Vocabulary size"), self.vocab_spin),
            (self.model_form, N_("Preset"), self.preset_combo),
            (self.model_form, N_("d_model"), self.d_model),
            (self.model_form, N_("Heads"), self.heads),
            (self.model_form, N_("Encoder layers"), self.enc_layers),
            (self.model_form, N_("Decoder layers"), self.dec_layers),
            (self.model_form, N_("d_ff"), self.d_ff),
            (self.model_form, N_("Dropout"), self.dropout),
            (self.model_form, N_("Positions"), self.positional),
            (self.model_form, N_("Normalisation"), self.norm),
            (self.model_form, N_("Activation"), self.activation),
            (self.model_form, N_("Tied embeddings"), self.tie),
            (self.train_form, N_("Batch size"), self.batch),
            (self.train_form, N_("Schedule"), self.schedule),
            (self.train_form, N_("Warm-up steps"), self.warmup),
            (self.train_form, N_("Learning rate"), self.rate),
            (self.train_form, N_("Label smoothing"), self.smoothing),
            (self.train_form, N_("Gradient clipping"), self.clip),
            (self.train_form, N_("Seed"), self.seed),
            (self.train_form, N_("Evaluate every"), self.eval_every),
        ]
        self._row_labels = []
        for form, text, field in self._rows:
            label = QLabel()
            self._row_labels.append((label, text))
            form.addRow(label, field)
        for box, form in ((self.data_box, self.data_form), (self.model_box, self.model_form),
                          (self.train_box, self.train_form)):  # fmt: skip
            box.setLayout(form)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for w in (self.data_box, self.model_box, self.train_box, self.error_label):
            layout.addWidget(w)
        layout.addStretch(1)

        self.preset_combo.currentTextChanged.connect(self._on_preset)
        self.schedule.currentTextChanged.connect(self._on_schedule)
        self.task_combo.currentIndexChanged.connect(self._on_task)
        for w in [*self.findChildren(QSpinBox), *self.findChildren(QDoubleSpinBox)]:
            w.valueChanged.connect(self.validate)
        for w in self.findChildren(QComboBox):
            w.currentIndexChanged.connect(self.validate)
        self.tie.toggled.connect(self.validate)
        for w in [*self.findChildren(QSpinBox), *self.findChildren(QDoubleSpinBox)]:
            w.valueChanged.connect(self._on_edit)
        for w in self.findChildren(QComboBox):
            w.currentIndexChanged.connect(self._on_edit)
        self.tie.toggled.connect(self._on_edit)
        self.set_defaults()
        self.retranslate()
        self.edited = False  # changed by the person since the form last showed a run

    def retranslate(self) -> None:
        self.data_box.setTitle(tr("Data"))
        self.model_box.setTitle(tr("Model"))
        self.train_box.setTitle(tr("Training"))
        self.browse.setText(tr("Choose file…"))
        for label, text in self._row_labels:
            label.setText(tr(text))
        self.task_combo.setItemText(self.task_combo.count() - 1, tr("Your file…"))
        for i, name in enumerate(TASKS):
            self.task_combo.setItemData(i, tr(TASK_DESCRIPTIONS[name]), Qt.ToolTipRole)
        self._update_file_label()
        self._on_schedule_label_only()  # the label only: the rate itself stays as the person set it
        self.validate()

    def _on_edit(self, *_: Any) -> None:
        self.edited = True

    # -- values --------------------------------------------------------------------------------
    def set_defaults(self) -> None:
        self.tokenizer_combo.setCurrentText("word")
        self.vocab_spin.setValue(8000)
        self.preset_combo.setCurrentText("tiny")
        self._on_preset("tiny")
        self.schedule.setCurrentText("noam")
        self._on_schedule("noam")  # its label, decimals and default rate (no signal if already "noam")
        self.smoothing.setValue(0.1)
        self.clip.setValue(1.0)

    def _on_preset(self, name: str) -> None:
        p = PRESETS.get(name)
        if p is None:
            return
        self.d_model.setValue(p["d_model"])
        self.heads.setValue(p["n_heads"])
        self.enc_layers.setValue(p["n_encoder_layers"])
        self.dec_layers.setValue(p["n_decoder_layers"])
        self.d_ff.setValue(p["d_ff"])
        self.dropout.setValue(p["dropout"])
        self.tie.setChecked(p.get("tie_embeddings", False))  # the paper presets tie, as in §3.4
        t = TrainConfig(**TRAIN_PRESETS.get(name, {}))
        self.batch.setValue(t.batch_size)
        self.warmup.setValue(t.warmup_steps)
        self.eval_every.setValue(t.eval_every)
        self.seed.setValue(t.seed)

    def _on_schedule(self, schedule: str) -> None:
        self._on_schedule_label_only()
        self.rate.setValue(1.0 if schedule == "noam" else 5e-4)

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

    def model_overrides(self) -> dict[str, Any]:
        return dict(
            d_model=self.d_model.value(), n_heads=self.heads.value(), n_encoder_layers=self.enc_layers.value(),
            n_decoder_layers=self.dec_layers.value(), d_ff=self.d_ff.value(), dropout=round(self.dropout.value(), 4),
            positional=self.positional.currentText(), norm=self.norm.currentText(),
            activation=self.activation.currentText(), tie_embeddings=self.tie.isChecked(),
        )  # fmt: skip

    def train_config(self) -> TrainConfig:
        noam = self.schedule.currentText() == "noam"
        rate = self.rate.value()
        return TrainConfig(
            batch_size=self.batch.value(), schedule=self.schedule.currentText(),
            warmup_steps=self.warmup.value(), noam_factor=rate if noam else 1.0, lr=5e-4 if noam else rate,
            label_smoothing=round(self.smoothing.value(), 4), clip_norm=self.clip.value(), seed=self.seed.value(),
            eval_every=self.eval_every.value(), total_steps=max(10000, self.warmup.value() + 1),
        )  # fmt: skip

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
        ModelConfig.preset(self.preset_combo.currentText(), src_vocab_size=100, tgt_vocab_size=100, **overrides)
        tokenizer = TokenizerSpec(self.tokenizer_combo.currentText(), self.vocab_spin.value())
        return NewModelSpec(data, self.preset_combo.currentText(), overrides, self.train_config(), tokenizer)

    def validate(self) -> bool:
        try:
            self.spec()
            message = ""
        except (ValueError, DataError) as exc:
            message = (
                str(exc).replace("Invalid model configuration: ", "").replace("Invalid training configuration: ", "")
            )
        self.error_label.setText(message)
        self.error_label.setVisible(bool(message))
        self.validity_changed.emit(not message)
        return not message

    def show_run(self, info: RunInfo) -> None:
        """Fill the form with the settings of the run that is now loaded."""
        for w in self.findChildren(QWidget):
            w.blockSignals(True)
        try:
            m, t, d = info.model_config, info.train_config, info.data
            if d.task:
                self.task_combo.setCurrentIndex(self.task_combo.findData(d.task))
            else:
                self.data_path = d.path
                self.task_combo.setCurrentIndex(self.task_combo.count() - 1)
            self.tokenizer_combo.setCurrentText(info.tokenizer.kind)
            if info.preset in PRESETS:
                self.preset_combo.setCurrentText(info.preset)
            self.d_model.setValue(m.d_model)
            self.heads.setValue(m.n_heads)
            self.enc_layers.setValue(m.n_encoder_layers)
            self.dec_layers.setValue(m.n_decoder_layers)
            self.d_ff.setValue(m.d_ff)
            self.dropout.setValue(m.dropout)
            self.positional.setCurrentText(m.positional)
            self.norm.setCurrentText(m.norm)
            self.activation.setCurrentText(m.activation)
            self.tie.setChecked(m.tie_embeddings)
            self.batch.setValue(t.batch_size)
            self.schedule.setCurrentText(t.schedule)
            self.warmup.setValue(t.warmup_steps)
            self.rate.setDecimals(3 if t.schedule == "noam" else 6)
            self.rate.setValue(t.noam_factor if t.schedule == "noam" else t.lr)
            self.smoothing.setValue(t.label_smoothing)
            self.clip.setValue(t.clip_norm)
            self.seed.setValue(t.seed)
            self.eval_every.setValue(t.eval_every)
        finally:
            for w in self.findChildren(QWidget):
                w.blockSignals(False)
        self._update_file_label()
        self._on_schedule_label_only()
        self.validate()
        self.edited = False

    def _on_schedule_label_only(self) -> None:
        noam = self.schedule.currentText() == "noam"
        self.rate.setDecimals(3 if noam else 6)
        for label, text in self._row_labels:
            if text == "Learning rate":
                label.setText(tr("Noam factor") if noam else tr("Learning rate"))


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
