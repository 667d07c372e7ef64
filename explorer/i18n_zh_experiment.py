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
}
