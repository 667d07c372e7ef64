"""简体中文 for the Why panel's strings (explorer/panels/interpret*.py): attribution and the logit lens."""
# ruff: noqa: E501 — prose: Chinese characters count double towards the line length

ZH_INTERPRET: dict[str, str] = {
    "Why?": "为什么？",
    "Attribution": "归因",
    "Logit lens": "逻辑透镜",
    "Integrated gradients": "积分梯度",
    "Gradient × input": "梯度 × 输入",
    "Attention rollout": "注意力展开",
    "Integrated gradients: each cell is how much that input token moved log P of the row's token, summed along "
    "a path from a blank input (all-zero embeddings) to the real one. A row adds up to log P − log P(blank).": "积分梯度：每个格子是那个输入词元让这一行词元的 log P 改变了多少，"
    "沿着从空白输入（全零嵌入）到真实输入的路径累加而成。一行之和等于 log P − log P(空白)。",
    "Gradient × input: each input token's embedding times the gradient of log P of the row's token — a quick, "
    "local estimate of what a small change of that token would do.": "梯度 × 输入：每个输入词元的嵌入乘以这一行词元 log P 的梯度——"
    "快速的局部估计：那个词元稍有变化会带来什么。",
    "Attention rollout: every layer's attention (with its residual path) multiplied through, how much of each "
    "input token reaches the row's token. Attention, not cause: never negative.": "注意力展开：把每一层的注意力（连同残差通路）相乘，"
    "看每个输入词元有多少到达了这一行的词元。这是注意力，不是原因：从不为负。",
    "Red: pushed towards the row's token; blue: pushed against it. The outlined row is the current step.": "红色：推向这一行的词元；蓝色：推离它。带框的一行是当前这一步。",
    "Method": "方法",
    "Steps": "步数",
    "Integrated gradients: points on the path from the blank input (more: exacter)": "积分梯度：从空白输入出发的路径上取的点数（越多越精确）",
    "Rather than": "而不是",
    "Why the current token rather than this one? (Or click a candidate's bar.)": "为什么是当前的词元而不是这一个？（也可以点击候选词的条。）",
    "Clear": "清除",
    "Show on the source words": "在原文词上显示",
    "Computing…": "正在计算…",
    "Computing… {done} of {total} points of the path": "正在计算… 路径上的 {total} 个点已算完 {done} 个",
    "Last row: why “{x}” rather than “{y}” — log P(“{x}”) − log P(“{y}”) explained.": "最后一行：为什么是“{x}”而不是“{y}”——解释的是 log P(“{x}”) − log P(“{y}”)。",
    "Step the decoding (or fill a mask): why the model said each token appears here.": "单步解码（或填空）：模型为什么说出每个词元，会显示在这里。",
    "(nothing)": "（无）",
    "Tint: each source token's attribution to “{token}” (red: for it, blue: against it)": "颜色：每个原文词元对“{token}”的归因（红色：支持，蓝色：反对）",
    "input": "输入",
    "Logit lens: what each layer would say": "逻辑透镜：每一层会说什么",
    "Step the decoding: what each layer would predict at that step appears here.": "单步解码：每一层在这一步会预测什么，会显示在这里。",
    "guess {n}": "猜测 {n}",
    "layer": "层",
    "After “{read}” the model says “{answer}”: it is on top from layer {n} on (★).": "读入“{read}”之后模型说“{answer}”：从第 {n} 层起它一直排第一（★）。",
}
