"""Model panel: the architecture of the loaded model and where its parameters are.

Route: it asks for nothing; the main window hands it each run the engine describes
(``Engine.run_described``, built by ``Engine._run_info`` in explorer/engine_base.py from the Session).
"""

from __future__ import annotations

from html import escape

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHeaderView, QLabel, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from explorer.answers import RunInfo
from explorer.i18n import N_, mark, tr
from explorer.widgets import named
from model.core.config import ModelConfig

TOKENIZER_OF = {"marian": "SentencePiece", "gpt2": "byte-level BPE", "bert": "WordPiece"}  # an opened model's


def tokenizer_text(info: RunInfo) -> str:
    """The tokenizer's kind and the vocabulary sizes (one for a single-stream model), in the interface language;
    a model opened from a folder reads with the tokenizer it came with."""
    src, tgt = info.vocab_sizes
    if info.model_origin is not None:
        kind = TOKENIZER_OF.get(info.model_origin.model_type, info.model_origin.model_type)
        if info.model_config.single_stream or src == tgt:
            return tr("the model's own {kind} ({n} pieces)").format(kind=kind, n=f"{src:,}")
        return tr("the model's own {kind} ({src} / {tgt} pieces)").format(kind=kind, src=f"{src:,}", tgt=f"{tgt:,}")
    if info.model_config.single_stream:
        return tr("{kind} ({n} pieces, one vocabulary)").format(kind=info.tokenizer.kind, n=src)
    return tr("{kind} ({src} / {tgt} pieces)").format(kind=info.tokenizer.kind, src=src, tgt=tgt)


def switched_off(m) -> list[str]:
    """The parts of the paper's Transformer this model goes without (the experiments' switches)."""
    said = []
    if m.positional == "none":
        said.append(tr("positional encoding (the model is not told where tokens are)"))
    if not m.residual:
        said.append(tr("residual connections (each sublayer's output replaces its input)"))
    if not m.scaled_attention:
        said.append(tr("the √d_k in attention (softmax(QKᵀ), not softmax(QKᵀ/√d_k))"))
    if not m.causal and "decoder" in m.family.stacks:
        said.append(tr("the causal mask (the decoder sees the tokens after the one it predicts)"))
    return said


# The values of the settings' choices in the interface language (in English the value itself, which is also what
# the command line takes): this panel's summary and the settings form's boxes (whose item data stays the value).
VALUE_NAMES = {
    "positional": {
        "none": N_("none"),
        "sinusoidal": N_("sinusoidal"),
        "learned": N_("learned"),
        "rope": N_("rope"),
        "t5_relative": N_("t5_relative"),
    },
    "norm": {"post": N_("post"), "pre": N_("pre")},
    "activation": {"relu": N_("relu"), "gelu": N_("gelu"), "silu": N_("silu"), "gelu_tanh": N_("gelu_tanh")},
    "schedule": {"noam": N_("noam"), "constant": N_("constant"), "cosine": N_("cosine")},
}


def family_title(m: ModelConfig) -> str:
    """What the model is, in the interface language: “Decoder-only Transformer (GPT: predicts the next token)”."""
    return tr(m.family.labels["title"])


def origin_text(info: RunInfo) -> str:
    """Where the model came from: "Opened from Hugging Face: marian · opus-mt-en-zh", or its preset."""
    o = info.model_origin
    if o is None:
        return f"{tr('preset')} <i>{escape(info.preset)}</i>"
    return tr("Opened from Hugging Face: {what}").format(what=f"<i>{escape(o.model_type)} · {escape(o.name)}</i>")


def stacks_text(m: ModelConfig) -> str:
    """The layers the family has, and what attends to what (a single-stream family says it in its spec's labels:
    "stacks"); a classification head (encoder-only models only) after them."""
    stacks = m.family.labels.get("stacks")
    if stacks is None:  # the paper's two stacks
        return f"N = {m.n_encoder_layers} {tr('encoder layers')} + {m.n_decoder_layers} {tr('decoder layers')}"
    text = tr(stacks).format(n=m.n_layers)
    if m.n_classes:
        text += "; " + tr("a classifier on the first position ({k} classes)").format(k=m.n_classes)
    return text


def parameters_text(info: RunInfo) -> str:
    """All the parameters; with experts also those one token passes through (k of each layer's N experts)."""
    m = info.model_config
    if not m.moe:
        return f"<b>{tr('Parameters')}{mark(': ')}{info.total_parameters:,}</b>"
    share = 100 * info.active_parameters / max(1, info.total_parameters)
    experts = tr(
        "Mixture of experts: {n} expert FFNs in each layer; a router sends each token to {k} of them "
        "(balance loss × {w:g})"
    ).format(n=m.n_experts, k=m.experts_top_k, w=m.aux_loss_coef)
    active = tr("{active} active per token ({share:.0f}%)").format(active=f"{info.active_parameters:,}", share=share)
    return f"{experts}<br><b>{tr('Parameters')}{mark(': ')}{info.total_parameters:,}{mark('; ')}{active}</b>"


class ModelPanel(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("model_panel")
        self.info: RunInfo | None = None
        self.loading = False  # a model asked for at start-up is on its way
        self.summary = named(QLabel(), "model_summary")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.table = named(QTableWidget(0, 3), "parameter_table")
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addWidget(self.table, 1)
        self.retranslate()

    def retranslate(self) -> None:
        self.table.setHorizontalHeaderLabels([tr("Component"), tr("Parameters"), tr("Share")])
        if self.info is None and self.loading:
            self.summary.setText(tr("Loading the trained model that comes with the program…"))
        elif self.info is None:
            self.summary.setText(tr("No model yet: choose a task in the Training panel and press Start."))
        else:
            self.on_run(self.info)

    def set_loading(self, loading: bool) -> None:
        """Say that the start-up's model is on its way (until it, or a failure, arrives)."""
        if loading == self.loading:
            return  # a new text would re-lay out the whole window (50–80 ms), for nothing
        self.loading = loading
        if self.info is None:
            self.retranslate()

    def on_run(self, info: RunInfo) -> None:
        self.info = info
        m = info.model_config
        norm = tr("Post-LN (as in the paper)") if m.norm == "post" else tr("Pre-LN (final norms)")
        tied = []
        if m.shared_vocab and not m.single_stream:  # (a single-stream model has one vocabulary anyway)
            tied.append(tr("one vocabulary for source and target"))
        if m.tie_embeddings:
            tied.append(
                tr("output projection tied to the token embedding")
                if m.single_stream
                else tr("output projection tied to the target embedding")
            )
        positional = tr(VALUE_NAMES["positional"].get(m.positional, m.positional))
        if m.positional == "sinusoidal" and m.sinusoid_layout == "split":
            positional += mark(" ") + tr("(sines in the first half of the dimensions, cosines in the second)")
        if not m.scale_embedding:
            positional += mark("; ") + tr("embeddings not scaled by √d_model")
        if m.embed_norm:
            positional += mark("; ") + tr("LayerNorm over the summed embeddings")
        activation = tr(VALUE_NAMES["activation"].get(m.activation, m.activation))
        lines = [
            f"<b>{family_title(m)}</b> — {origin_text(info)}",
            f"{stacks_text(m)}{mark('; ')}d_model = {m.d_model}, h = {m.n_heads} {tr('heads')} "
            f"(d_k = d_v = {m.head_dim}), d_ff = {m.d_ff}, P_drop = {m.dropout:g}",
            f"{norm}{mark('; ')}{tr('positional encoding')}{mark(': ')}{positional}{mark('; ')}"
            f"{tr('activation')}{mark(': ')}{activation}{mark('; ')}max_len = {m.max_len}",
            f"{tr('Tokenizer')}{mark(': ')}{tokenizer_text(info)}"
            + (mark("; ") + mark(", ").join(tied) if tied else ""),
            parameters_text(info),
        ]
        switched = switched_off(m)
        if switched:  # an experiment's change, said where a person reads what the model is
            lines.insert(3, f"<b>{tr('Switched off')}</b>{mark(': ')}{mark('; ').join(switched)}")
        self.summary.setText("<br>".join(lines))
        origin = info.model_origin
        self.summary.setToolTip(tr("Read from the folder {folder}").format(folder=origin.folder) if origin else "")
        rows = sorted(info.parameters.items(), key=lambda kv: -kv[1])
        self.table.setRowCount(len(rows))
        for r, (group, count) in enumerate(rows):
            share = count / max(1, info.total_parameters)
            label = tr(m.family.group_label(group))
            if m.moe and group.endswith("feed_forward"):  # a Mixture-of-Experts layer's FFN: its experts and router
                label += " " + tr("({n} experts and the router)").format(n=m.n_experts)
            for c, text in enumerate((label, f"{count:,}", f"{100 * share:.1f}%")):
                item = QTableWidgetItem(text)
                if c:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(r, c, item)
