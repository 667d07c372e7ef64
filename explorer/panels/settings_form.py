"""The settings form of the Training panel: data, tokenizer, architecture and optimisation, checked
before anything is built.

The family (encoder–decoder, decoder-only, encoder-only) decides what else applies, as its spec says
(:mod:`model.families.registry`): which task list is offered (its data: translation pairs, or single texts), which
layer rows are shown (its stacks: a decoder-only model has no encoder, an encoder-only model no decoder) and whether
next-sentence prediction can be chosen (a masked-LM objective); the experts' rows beyond "Experts" show only for a
Mixture-of-Experts model (more than one expert)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import QRect, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractSpinBox,
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
    QSizePolicy,
    QSpinBox,
    QStyle,
    QStyleOptionComboBox,
    QVBoxLayout,
    QWidget,
)

from explorer.answers import RunInfo
from explorer.commands import NewModelSpec
from explorer.i18n import N_, tr
from explorer.panels.model_info import VALUE_NAMES
from explorer.widgets import named
from model.core.config import PRESETS, ModelConfig
from model.core.settings import ConfigError, SettingField, SettingValue, form_settings, settings_of
from model.data import MONOLINGUAL_TASKS, TASK_DESCRIPTIONS, TASKS, DataError, DataSpec, is_monolingual
from model.data.tokenization import TOKENIZER_KINDS, TokenizerSpec
from model.families.registry import FAMILIES, FamilySpec
from model.training.config import TRAIN_PRESETS, TrainConfig

FILE_ITEM = "file"
# The Model and Training rows: the ModelConfig and TrainConfig fields whose Setting says form=True, in field order,
# each with the label, range and choices its field declares.
MODEL_SETTINGS = form_settings(ModelConfig)
TRAIN_SETTINGS = {s.name: s for s in form_settings(TrainConfig)}
FAMILY_SETTING = next(s for s in MODEL_SETTINGS if s.name == "arch")  # a row of the Data box: it decides the tasks
NSP_SETTING = next(s for s in settings_of(TrainConfig) if s.name == "nsp")  # a row of encoder-only models only
ARCH_FIELDS = tuple(s.name for s in MODEL_SETTINGS)  # changing any of these needs a new model
RATE_FIELDS = ("noam_factor", "lr")  # one row, the rate the schedule uses: the Noam factor, or lr
# Shorter attribute names that the panels and tests use for some rows (form.heads, form.batch…); the others go by
# their field's name (form.d_model, form.schedule…). The rate row is form.rate.
SHORT_NAMES = {
    "n_heads": "heads",
    "n_encoder_layers": "enc_layers",
    "n_decoder_layers": "dec_layers",
    "tie_embeddings": "tie",
    "batch_size": "batch",
    "warmup_steps": "warmup",
    "label_smoothing": "smoothing",
    "clip_norm": "clip",
    "arch": "arch_combo",
    "n_experts": "experts_spin",
    "experts_top_k": "experts_top_k_spin",
    "aux_loss_coef": "balance_spin",
}
# The tasks each kind of family learns from: sentence pairs (encoder–decoder) or single texts (the others).
PAIR_TASKS = tuple(t for t in TASKS if t not in MONOLINGUAL_TASKS)
TEXT_TASKS = tuple(MONOLINGUAL_TASKS)
FIRST_TASKS = {"pairs": "copy", "text": "text-hsk-zh"}  # chosen when a family of that kind is first picked


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
    """The editor of one setting: a combo box of its choices (each item's data its value), a check box, or a
    spin box over its range."""
    w: Editor
    if s.choices:
        combo = QComboBox()
        for choice in s.choices:
            combo.addItem(choice, choice)  # a readable name replaces the text in retranslate
        # as wide as its longest choice, in the language shown (the settings column is made that wide)
        combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
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
        return w.currentData()
    if isinstance(w, QCheckBox):
        return w.isChecked()
    if isinstance(w, QDoubleSpinBox):
        return round(w.value(), w.decimals())
    return w.value()


def fit_choices(combo: QComboBox) -> None:
    """Make ``combo`` wide enough for its longest choice (its size hint falls a few pixels short in some styles,
    and the name chosen would then be cut with "…")."""
    option = QStyleOptionComboBox()
    combo.initStyleOption(option)
    option.rect = QRect(0, 0, 400, max(combo.height(), 20))
    field = combo.style().subControlRect(
        QStyle.ComplexControl.CC_ComboBox, option, QStyle.SubControl.SC_ComboBoxEditField, combo
    )
    metrics = combo.fontMetrics()
    widest = max((metrics.horizontalAdvance(combo.itemText(i)) for i in range(combo.count())), default=0)
    combo.setMinimumWidth(widest + option.rect.width() - field.width() + 2)


def fit_number(spin: QAbstractSpinBox) -> None:
    """A few pixels beyond the spin box's own least width, which in some styles cuts its number's last pixel."""
    spin.setMinimumWidth(spin.minimumSizeHint().width() + 4)


def set_widget_value(w: Editor, value: Any) -> None:
    if isinstance(w, QComboBox):
        index = w.findData(value)
        if index >= 0:
            w.setCurrentIndex(index)
    elif isinstance(w, QCheckBox):
        w.setChecked(value)
    else:
        w.setValue(value)


def rate_field(schedule: str) -> str:
    """The TrainConfig field that the rate row edits under ``schedule``."""
    return "noam_factor" if schedule == "noam" else "lr"


def learns_nsp(family: FamilySpec) -> bool:
    """Whether ``family`` may learn next-sentence prediction besides its objective (BERT's, with masked tokens)."""
    return family.objective == "mlm"


def family_problem(family: FamilySpec, data: DataSpec, nsp: bool) -> str:
    """Why ``data`` (or next-sentence prediction) does not suit the family, in words a person can act on;
    "" when it does (the engine checks the same before it builds anything)."""
    text = is_monolingual(data)
    if family.data == "text" and not text:
        return tr(
            "{family} learns from plain text: choose a text task (text-…) or your own text file, one sentence per line."
        ).format(family=tr(family.labels["subject"]))
    if family.data == "pairs" and text:
        return tr(
            "An encoder–decoder model learns to translate sentence pairs: choose a translation task or "
            "a file of sentence pairs, or a single-stream family for plain text."
        )
    if nsp and not learns_nsp(family):
        return tr("Next-sentence prediction is learnt by encoder-only models: turn it off or choose that family.")
    return ""


class SettingsForm(QWidget):
    """Data, tokenizer, architecture and optimisation settings; refuses what cannot work."""

    validity_changed = Signal(bool)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.data_path: str | None = None
        # per kind of data (a family's data), the task chosen last (FILE_ITEM: a file) and the file chosen last
        self._chosen: dict[str, tuple[str, str | None]] = {k: (t, None) for k, t in FIRST_TASKS.items()}
        self._shown_kind: str | None = None  # the kind of data whose tasks the task list holds
        self._create_data_rows()
        self._create_setting_rows()
        self._lay_out()
        self._connect()
        self.set_defaults()
        self.retranslate()
        self.edited = False  # changed by the person since the form last showed a run

    def _create_data_rows(self) -> None:
        self.task_combo = named(QComboBox(), "task_combo")
        self.task_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)  # task names read whole
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
        """One editor per model and training setting, the rate row's editor and label, and the NSP check box."""
        self.model_widgets = {s.name: setting_widget(s) for s in MODEL_SETTINGS}
        self.train_widgets = {name: setting_widget(s) for name, s in TRAIN_SETTINGS.items() if name not in RATE_FIELDS}
        for name, w in {**self.model_widgets, **self.train_widgets}.items():
            setattr(self, SHORT_NAMES.get(name, name), w)
        rate = setting_widget(TRAIN_SETTINGS["lr"])  # its decimals and label follow the schedule
        schedule = self.train_widgets["schedule"]
        arch, experts, top_k = (self.model_widgets[k] for k in ("arch", "n_experts", "experts_top_k"))
        assert isinstance(rate, QDoubleSpinBox) and isinstance(schedule, QComboBox) and isinstance(arch, QComboBox)
        assert isinstance(experts, QSpinBox) and isinstance(top_k, QSpinBox)
        self.rate, self.schedule = rate, schedule
        self.arch_combo, self.experts_spin, self.experts_top_k_spin = arch, experts, top_k
        for combo in (self.task_combo, self.arch_combo):  # the whole width for their long names
            combo.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.rate.setObjectName("rate_spin")
        self._rate_label = QLabel()
        nsp = setting_widget(NSP_SETTING)
        assert isinstance(nsp, QCheckBox)
        self.nsp_check = nsp

    def _lay_out(self) -> None:
        self.data_box, self.model_box, self.train_box = QGroupBox(), QGroupBox(), QGroupBox()
        self.data_form, self.model_form, self.train_form = QFormLayout(), QFormLayout(), QFormLayout()
        for form in (self.data_form, self.model_form, self.train_form):  # narrow: the field under its label
            form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        file_row = QHBoxLayout()
        file_row.addWidget(self.file_label, 1)
        file_row.addWidget(self.browse)
        rows: list[tuple[QFormLayout, str | None, QWidget | QLayout]] = [
            (self.data_form, FAMILY_SETTING.setting.label, self.arch_combo),  # the family decides the tasks
            (self.data_form, N_("Task"), self.task_combo),
            (self.data_form, N_("Data file"), file_row),
            (self.data_form, N_("Tokenizer"), self.tokenizer_combo),
            (self.data_form, N_("Vocabulary size"), self.vocab_spin),
            (self.model_form, N_("Preset"), self.preset_combo),
        ]
        rows += [
            (self.model_form, s.setting.label, self.model_widgets[s.name]) for s in MODEL_SETTINGS if s.name != "arch"
        ]
        for name, s in TRAIN_SETTINGS.items():
            if name == RATE_FIELDS[0]:
                rows.append((self.train_form, None, self.rate))  # its label follows the schedule
            elif name not in RATE_FIELDS:
                rows.append((self.train_form, s.setting.label, self.train_widgets[name]))
        rows.append((self.train_form, NSP_SETTING.setting.label, self.nsp_check))
        self._row_labels: list[tuple[QLabel, str]] = []
        for form, text, field in rows:
            label = self._rate_label if text is None else QLabel()
            if text is not None:
                self._row_labels.append((label, text))
            form.addRow(label, field)
        for box, form in (
            (self.data_box, self.data_form),
            (self.model_box, self.model_form),
            (self.train_box, self.train_form),
        ):
            box.setLayout(form)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for w in (self.data_box, self.model_box, self.train_box, self.error_label):
            layout.addWidget(w)
        layout.addStretch(1)

    def _connect(self) -> None:
        self.browse.clicked.connect(self._on_browse)
        self.preset_combo.currentTextChanged.connect(self._on_preset)
        self.schedule.currentIndexChanged.connect(self._on_schedule)
        self.task_combo.currentIndexChanged.connect(self._on_task)
        # before validate (connected below): the family's tasks and rows are in place when it checks
        self.arch_combo.currentIndexChanged.connect(self._on_family)
        self.arch_combo.currentTextChanged.connect(self.arch_combo.setToolTip)  # whole, where the box cuts it
        self.experts_spin.valueChanged.connect(self._on_experts)
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
        # each family by its spec's name, short enough to be read whole in the settings column of a 1366-px laptop
        # (the box's data stays the arch); what each learns is in the tooltip
        combo = self.arch_combo
        for i in range(combo.count()):
            family = FAMILIES[combo.itemData(i)]
            combo.setItemText(i, tr(family.labels["family"]))
            combo.setItemData(i, tr(family.labels["family_tip"]), Qt.ItemDataRole.ToolTipRole)
        combo.view().setMinimumWidth(combo.view().sizeHintForColumn(0) + 8)  # the list shows whole names
        combo.setToolTip(combo.currentText())
        self._name_values()
        self._name_tasks()
        for choices in self.findChildren(QComboBox):
            fit_choices(choices)
        for number in self.findChildren(QAbstractSpinBox):
            fit_number(number)
        self._update_file_label()
        self._show_rate_row()  # the label and decimals only: the rate itself stays as the person set it
        self.validate()

    def _name_values(self) -> None:
        """Each choice's value in the interface language, and each setting's help as the tooltip of its row (the
        family's box keeps its name as tooltip: a narrow box cuts it)."""
        for name, names in VALUE_NAMES.items():
            combo = {**self.model_widgets, **self.train_widgets}[name]
            assert isinstance(combo, QComboBox)
            for i in range(combo.count()):
                combo.setItemText(i, tr(names.get(combo.itemData(i), combo.itemData(i))))
        rows = [(s, self.model_form, self.model_widgets[s.name]) for s in MODEL_SETTINGS if s is not FAMILY_SETTING]
        rows += [(s, self.train_form, self.train_widgets[n]) for n, s in TRAIN_SETTINGS.items() if n not in RATE_FIELDS]
        rows.append((NSP_SETTING, self.train_form, self.nsp_check))
        for s, form, widget in rows:
            widget.setToolTip(tr(s.setting.help))
            label = form.labelForField(widget)
            if label is not None:
                label.setToolTip(tr(s.setting.help))
        family = self.data_form.labelForField(self.arch_combo)
        if family is not None:
            family.setToolTip(tr(FAMILY_SETTING.setting.help))

    def _name_tasks(self) -> None:
        """The file item's text and each task's description (a tooltip)."""
        text = self._kind() == "text"
        last = self.task_combo.count() - 1
        self.task_combo.setItemText(last, tr("Your text file…") if text else tr("Your file…"))
        for i in range(last):
            self.task_combo.setItemData(
                i, tr(TASK_DESCRIPTIONS[self.task_combo.itemData(i)]), Qt.ItemDataRole.ToolTipRole
            )

    def _on_edit(self, *_: Any) -> None:
        self.edited = True

    # -- the family -------------------------------------------------------------------------------------
    def _family(self) -> FamilySpec:
        return FAMILIES[self.arch_combo.currentData()]

    def _kind(self) -> str:
        return self._family().data

    def _fill_tasks(self) -> None:
        """The tasks that suit the family, then "Your file…"; the one chosen last for this kind of data is
        selected (without signals: the caller updates what depends on it)."""
        kind = self._kind()
        task, path = self._chosen[kind]
        combo = self.task_combo
        combo.blockSignals(True)
        try:
            combo.clear()
            for name in TEXT_TASKS if kind == "text" else PAIR_TASKS:
                combo.addItem(name, name)
            combo.addItem("", FILE_ITEM)
            self.data_path = path
            combo.setCurrentIndex(max(0, combo.findData(task)))
            self._shown_kind = kind
            self._name_tasks()
            combo.view().setMinimumWidth(combo.view().sizeHintForColumn(0) + 8)
            fit_choices(combo)
        finally:
            combo.blockSignals(False)

    def _on_family(self) -> None:
        """Another family: its rows, and when it learns from another kind of data the tasks of that kind, with
        the one chosen there before (the choice left behind is kept for the way back)."""
        kind = self._kind()
        if kind != self._shown_kind:
            if self._shown_kind is not None:
                self._chosen[self._shown_kind] = (self.task_combo.currentData(), self.data_path)
            self._fill_tasks()
        self._show_family_rows()
        self._update_file_label()

    def _on_experts(self, n: int) -> None:
        self.experts_top_k_spin.setMaximum(n)  # each token goes to at most all of the experts
        self._show_family_rows()

    def _show_family_rows(self) -> None:
        """Only the rows that apply to this family and this number of experts."""
        family, moe = self._family(), self.experts_spin.value() > 1
        self.model_form.setRowVisible(self.model_widgets["n_encoder_layers"], "encoder" in family.stacks)
        self.model_form.setRowVisible(self.model_widgets["n_decoder_layers"], "decoder" in family.stacks)
        self.model_form.setRowVisible(self.experts_top_k_spin, moe)
        self.model_form.setRowVisible(self.model_widgets["aux_loss_coef"], moe)
        self.train_form.setRowVisible(self.nsp_check, learns_nsp(family))

    def row_shown(self, widget: QWidget) -> bool:
        """Whether the form shows the row of ``widget`` (hidden rows do not apply to this model)."""
        for form in (self.data_form, self.model_form, self.train_form):
            if form.indexOf(widget) >= 0:
                return form.isRowVisible(widget)
        return False

    # -- values --------------------------------------------------------------------------------
    def set_defaults(self) -> None:
        """Every row at its field's default, then the "tiny" preset's values."""
        self.tokenizer_combo.setCurrentText(TokenizerSpec.kind)
        self.vocab_spin.setValue(TokenizerSpec.vocab_size)
        for s in MODEL_SETTINGS:
            set_widget_value(self.model_widgets[s.name], s.default)
        for name, w in self.train_widgets.items():
            set_widget_value(w, TRAIN_SETTINGS[name].default)
        self.nsp_check.setChecked(NSP_SETTING.default)
        self.preset_combo.setCurrentText("tiny")
        self._on_preset("tiny")
        self._on_schedule()  # the rate row (no signal: the schedule was already noam)
        self._on_experts(self.experts_spin.value())
        self._on_family()

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

    def _on_schedule(self, *_: Any) -> None:
        self._show_rate_row()
        self.rate.setValue(TRAIN_SETTINGS[rate_field(self.schedule.currentData())].default)

    def _show_rate_row(self) -> None:
        """Label and decimals of the rate row: those of the field the schedule uses (Noam factor or rate)."""
        s = TRAIN_SETTINGS[rate_field(self.schedule.currentData())]
        self.rate.setDecimals(s.setting.decimals)
        fit_number(self.rate)
        self._rate_label.setText(tr(s.setting.label))
        self._rate_label.setToolTip(tr(s.setting.help))
        self.rate.setToolTip(tr(s.setting.help))

    def _on_task(self) -> None:
        if self.task_combo.currentData() == FILE_ITEM and not self.data_path:
            self._on_browse()
        self._update_file_label()
        self.validate()

    def _on_browse(self) -> None:
        if self._kind() == "text":
            title, kinds = tr("Plain text"), tr("Plain text, one sentence per line (*.txt);;All files (*)")
        else:
            title, kinds = tr("Sentence pairs"), tr("Sentence pairs (*.tsv *.txt *.jsonl *.json);;All files (*)")
        path, _ = QFileDialog.getOpenFileName(self, title, "", kinds)
        if path:
            self.set_data_file(path)

    def set_data_file(self, path: str | None) -> None:
        """Train on the file at ``path``: sentence pairs for an encoder–decoder model, plain text (one sentence
        per line) for the single-stream families."""
        self.data_path = path
        if path:
            self.task_combo.setCurrentIndex(self.task_combo.count() - 1)
        self._update_file_label()
        self.validate()

    def _update_file_label(self) -> None:
        use_file = self.task_combo.currentData() == FILE_ITEM
        self.file_label.setText(
            Path(self.data_path).name if (use_file and self.data_path) else (tr("none chosen") if use_file else "—")
        )
        self.browse.setEnabled(use_file)

    def model_overrides(self) -> dict[str, SettingValue]:
        return {name: widget_value(w) for name, w in self.model_widgets.items()}

    def train_config(self) -> TrainConfig:
        """The training rows; the rate the schedule does not use, and the fields without a row, at their
        defaults, except the cosine schedule's length: at least one step past the warm-up. Next-sentence
        prediction only where its row is shown (encoder-only)."""
        values = {name: widget_value(w) for name, w in self.train_widgets.items()}
        values[rate_field(values["schedule"])] = self.rate.value()
        values["total_steps"] = max(TrainConfig.total_steps, values["warmup_steps"] + 1)
        values["nsp"] = self.nsp_check.isChecked() and learns_nsp(self._family())
        return TrainConfig(**values)

    def data_spec(self) -> DataSpec:
        if self.task_combo.currentData() == FILE_ITEM:
            if not self.data_path:
                raise DataError(tr("Choose a data file, or pick one of the bundled tasks."))
            if self._kind() == "text":  # one sentence per line, for a single-stream model
                return DataSpec(task=None, path=self.data_path, file_format="text")
            return DataSpec(task=None, path=self.data_path)
        return DataSpec(task=self.task_combo.currentData())

    def spec(self) -> NewModelSpec:
        """The settings as a model specification; raises ValueError (or DataError) explaining what cannot work."""
        data = self.data_spec()
        overrides = self.model_overrides()
        fields: dict[str, Any] = dict(overrides)
        ModelConfig.preset(self.preset_combo.currentText(), src_vocab_size=100, tgt_vocab_size=100, **fields)
        train = self.train_config()
        problem = family_problem(FAMILIES[str(overrides["arch"])], data, train.nsp)
        if problem:
            raise DataError(problem)
        tokenizer = TokenizerSpec(self.tokenizer_combo.currentText(), self.vocab_spin.value())
        return NewModelSpec(data, self.preset_combo.currentText(), overrides, train, tokenizer)

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
            m, t = info.model_config, info.train_config
            set_widget_value(self.arch_combo, m.arch)
            self.experts_top_k_spin.setMaximum(m.n_experts)  # before its value (no signal follows it here)
            for name, w in self.model_widgets.items():
                set_widget_value(w, getattr(m, name))
            for name, w in self.train_widgets.items():
                set_widget_value(w, getattr(t, name))
            self.nsp_check.setChecked(t.nsp)
            self._show_data(info)
            self._show_rate_row()  # the run's schedule's decimals, before its rate
            self.rate.setValue(getattr(t, rate_field(t.schedule)))
        finally:
            for w in self.findChildren(QWidget):
                w.blockSignals(False)
        self._show_family_rows()
        self._update_file_label()
        self.validate()
        self.edited = False

    def _show_data(self, info: RunInfo) -> None:
        """The run's data (the task list of its family first), tokenizer and preset."""
        d, kind = info.data, info.model_config.family.data
        self._chosen[kind] = (d.task or FILE_ITEM, d.path if d.task is None else self._chosen[kind][1])
        self._fill_tasks()
        self.tokenizer_combo.setCurrentText(info.tokenizer.kind)
        if info.preset in PRESETS:
            self.preset_combo.setCurrentText(info.preset)


def only_the_data_differs(form_spec: NewModelSpec, info: RunInfo | None) -> bool:
    """True when the form asks for other data and nothing else that needs a new model: a model opened from a
    Hugging Face folder then learns it with its own weights and tokenizers."""
    if info is None or form_spec.data == info.data:
        return False
    return not needs_new_model(replace(form_spec, data=info.data), info)


def needs_new_model(form_spec: NewModelSpec, info: RunInfo | None) -> bool:
    """True when the form's settings cannot be applied to the loaded model."""
    if info is None:
        return True
    m = info.model_config
    if any(form_spec.model_overrides[k] != getattr(m, k) for k in ARCH_FIELDS):
        return True
    if form_spec.train.nsp and m.n_classes < 2:  # next-sentence prediction needs the model's classifier
        return True
    if form_spec.data != info.data:
        return True
    return form_spec.tokenizer.kind != info.tokenizer.kind
