"""简体中文 for switching heads off and the head-importance map (English source string → Chinese)."""
# ruff: noqa: E501 — prose: Chinese characters count double towards the line length

ZH_ABLATION: dict[str, str] = {
    # switching heads off (explorer/panels/attention_ablation.py)
    "Switch heads off": "关闭注意力头",
    "While this is pressed, a click on a map of the all-heads grid switches that head off, or on again; the decoding "
    "runs again without it. The heads stay off for every view until All heads on (training always uses them all).": "按下这个按钮时，"
    "在全部注意力头的网格中点击一张图，就会关闭那个头（再点一次重新打开）；解码会在没有它的情况下重新运行。"
    "这些头在所有视图中保持关闭，直到按下“全部打开”（训练始终使用全部的头）。",
    "Zero": "置零",
    "Mean": "均值",
    "Zero: a switched-off head's output is set to zero before W^O mixes the heads. Mean: it is replaced by its "
    "mean over held-out sentences, so the layer still gets a typical value, only no information about this input.": "置零：被关闭的头的输出在 W^O "
    "混合各头之前被设为零。均值：用它在留出句子上的平均输出代替，这样这一层仍能得到一个典型的值，只是不再带有关于这条输入的信息。",
    "All heads on": "全部打开",
    "Rows: layers; columns: heads. Click a map to switch that head off, or on again.": "行：层；列：头。点击一张图即可关闭那个头，再点一次重新打开。",
    "1 head off": "关闭了 1 个头",
    "{n} heads off": "关闭了 {n} 个头",
    "output unchanged: {before}": "输出没有变化：{before}",
    "output: {before} → {after}": "输出：{before} → {after}",
    "P(former output): {chips}": "原输出的概率：{chips}",
    # the head-importance map (explorer/panels/head_importance.py)
    "Head importance": "注意力头重要性",
    "Δloss without each head — {kind}": "去掉各个头后的 Δ损失 — {kind}",
    "layer {layer}, head {head}: Δloss {loss:+.4f}, Δaccuracy {accuracy:+.1%}": "第 {layer} 层，第 {head} 个头：Δ损失 {loss:+.4f}，Δ准确率 {accuracy:+.1%}",
    "layer {layer}, head {head}: not measured (the sweep was cancelled before it)": "第 {layer} 层，第 {head} 个头：未测量（在测到它之前已取消）",
    "layer": "层",
    "zero ablation": "置零消融",
    "mean ablation": "均值消融",
    "Switching heads off": "关闭注意力头",
    "Sentences": "句子数",
    "Held-out sentences each head is measured on": "测量每个头时使用的留出句子数",
    "Measure": "测量",
    "Switch each head off in turn and measure how much worse the model does": "依次关闭每个头，测量模型因此变差多少",
    "measuring the model with every head…": "正在测量使用全部头时的模型……",
    "head {done} of {total}": "第 {done} 个头，共 {total} 个",
    "Measure switches each head off in turn and shows how much the loss rises without it.": "“测量”会依次关闭每个头，显示没有它时损失上升了多少。",
    "with every head: loss {loss:.4f}, accuracy {accuracy:.1%}": "使用全部头时：损失 {loss:.4f}，准确率 {accuracy:.1%}",
    "{n} held-out sentences, {ablation}": "{n} 个留出句子，{ablation}",
    "measured at step {then} — now at step {now}": "在第 {then} 步测量 — 现在是第 {now} 步",
    "measured at step {n}": "在第 {n} 步测量",
    "cancelled after {done} of {total} heads: the others are blank": "测完 {total} 个头中的 {done} 个后已取消：其余的格子留空",
}
