"""简体中文 for the Experiment panel (explorer/panels/experiment.py) and the Experiments menu: English source
string → Chinese."""

ZH_EXPERIMENT: dict[str, str] = {
    "Experiment": "实验",
    "E&xperiments": "实验(&X)",
    "Sentence": "句子",
    "Reference": "参考",
    "Baseline": "基线",
    "Variant": "变体",
    "Encoder self-attention": "编码器自注意力",
    "Decoder self-attention": "解码器自注意力",
    "Cross-attention": "交叉注意力",
    "Run beside its baseline": "与基线并排运行",
    "Train the changed model and an intact one together: the same seed, starting weights and batches": (
        "把改动过的模型和一个完好的模型一起训练：同样的随机种子、初始权重和批次"
    ),
    "Look inside:": "查看内部：",
    "The run every other panel shows; both keep training": "其他面板显示的那次运行；两次运行都继续训练",
    "Layer": "层",
    "Head": "头",
    "all, averaged": "全部，取平均",
    "the variant: {title}": "变体：{title}",
    "the baseline": "基线",
    "What to expect, and why:": "预期结果及原因：",
    "Running: {title}.": "正在运行：{title}。",
    "No experiment is running: choose one and press “Run beside its baseline”.": (
        "没有正在运行的实验：选一个实验，然后点击“与基线并排运行”。"
    ),
    "Training both runs… the comparison comes at the first snapshot.": "两次运行正在训练……第一次快照时给出比较。",
    "At step {step}, {measure}: baseline <b>{base}</b> · variant <b>{variant}</b>.": (
        "第 {step} 步，{measure}：基线 <b>{base}</b> · 变体 <b>{variant}</b>。"
    ),
    "As predicted, so far.": "到目前为止，与预测一致。",
    "Not as predicted (yet).": "（暂时）与预测不符。",
    "entropy {bits} bits": "熵 {bits} 比特",
    "step {n}": "第 {n} 步",
    "baseline": "基线",
    "variant": "变体",
    "variant: {title}": "变体：{title}",
    "Running an experiment replaces the current model.": "运行实验会替换当前的模型。",
    "<b>{title}</b> — query {i} “{token}”: weights = softmax(q·kᵀ) = exp / Σ exp — this model does not divide by "
    "√d_k (d_k = {d_k}); Σ exp = {total}; output = Σ weight · v": (
        "<b>{title}</b> — 查询 {i}“{token}”：权重 = softmax(q·kᵀ) = exp / Σ exp —— 这个模型不除以 √d_k"
        "（d_k = {d_k}）；Σ exp = {total}；输出 = Σ 权重 · v"
    ),
    "not ÷ √d_k": "不 ÷ √d_k",
    "Norm: LayerNorm of the sublayer's output (no residual connection in this model)": (
        "归一化：对子层输出做 LayerNorm（这个模型没有残差连接）"
    ),
    "No residual connection: the sublayer's output replaces its input": "没有残差连接：子层的输出取代它的输入",
    "none: the model is not told where tokens are": "无：模型不知道词元的位置",
    "none": "无",
    "This model has no causal mask: position i also sees the words after it — in training, the very word it "
    "is asked to predict (the experiment “no causal mask”).": (
        "这个模型没有因果掩码：位置 i 也能看到它后面的词——训练时，正是它要预测的那个词（实验“GPT 没有因果掩码”）。"
    ),
    "This model does not divide the scores by √d<sub>k</sub> (the experiment “no √d_k scaling”): with "
    "d<sub>k</sub>-dimensional q and k their products grow like √d<sub>k</sub>, and the softmax saturates.": (
        "这个模型不把分数除以 √d<sub>k</sub>（实验“不除以 √d_k”）：q 和 k 是 d<sub>k</sub> 维的，"
        "它们的乘积按 √d<sub>k</sub> 增长，softmax 就会饱和。"
    ),
    "Switched off": "已关闭",
    "positional encoding (the model is not told where tokens are)": "位置编码（模型不知道词元的位置）",
    "residual connections (each sublayer's output replaces its input)": "残差连接（每个子层的输出取代它的输入）",
    "the √d_k in attention (softmax(QKᵀ), not softmax(QKᵀ/√d_k))": (
        "注意力里的 √d_k（softmax(QKᵀ)，而不是 softmax(QKᵀ/√d_k)）"
    ),
    "the causal mask (the decoder sees the tokens after the one it predicts)": (
        "因果掩码（解码器能看到它要预测的词元之后的词元）"
    ),
}
