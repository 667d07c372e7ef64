"""简体中文 for the interface strings of the model families' training views (English source string → Chinese)."""

ZH_TRAINING: dict[str, str] = {
    # the settings form: families, their data, next-sentence prediction
    "Encoder–decoder (the paper)": "编码器–解码器（论文原型）",
    "GPT: decoder-only, next token": "GPT：仅解码器，预测下一个词元",
    "BERT: encoder-only, masked tokens": "BERT：仅编码器，预测掩码词元",
    "GPT (decoder-only)": "GPT（仅解码器）",
    "BERT (encoder-only)": "BERT（仅编码器）",
    "Pause or stop the training first: Train from scratch replaces the model being trained": (
        "请先暂停或停止训练：“从头训练”会替换正在训练的模型"
    ),
    "The settings on the left cannot work yet: see the message under them": "左边的设置还不能用：请看它们下面的说明",
    "Next-sentence prediction": "下一句预测",
    "A decoder-only model": "仅解码器模型",
    "An encoder-only model": "仅编码器模型",
    "{family} learns from plain text: choose a text task (text-…) or your own text file, one sentence per line.": (
        "{family}从纯文本中学习：请选择一个文本任务（text-…），或你自己的文本文件（每行一句）。"
    ),
    "An encoder–decoder model learns to translate sentence pairs: choose a translation task or a file of "
    "sentence pairs, or a single-stream family for plain text.": (
        "编码器–解码器模型学习翻译句对：请选择一个翻译任务或句对文件；纯文本请选择单流模型家族。"
    ),
    "Next-sentence prediction is learnt by encoder-only models: turn it off or choose that family.": (
        "只有仅编码器模型学习下一句预测：请关闭它，或选择这个模型家族。"
    ),
    "Your text file…": "你的文本文件…",
    "Plain text": "纯文本",
    "Plain text, one sentence per line (*.txt);;All files (*)": "纯文本，每行一句 (*.txt);;所有文件 (*)",
    # the training plots
    "Perplexity (valid)": "困惑度（验证集）",
    "perplexity": "困惑度",
    "Masked-token accuracy (valid)": "掩码词元准确率（验证集）",
    "Masked-token and next-sentence accuracy (valid)": "掩码词元与下一句预测的准确率（验证集）",
    "masked tokens right %": "掩码词元猜对 %",
    "next sentence right %": "下一句判断正确 %",
    "Experts' load: share of tokens": "专家负载：各专家分到的词元比例",
    # a followed run's own scalars (TensorBoard tags, a Trainer's metrics)
    "Logged scalars": "记录的标量",
    "Scalars logged by {name}": "{name} 记录的标量",
    "Filter tags": "筛选标签",
    "Shows the tags that contain these letters (a | b: either). Enter draws exactly the tags shown: type loss and "
    "press Enter to compare train/loss with eval/loss.": (
        "只列出包含这些字母的标签（a | b：两者之一）。按 Enter 只画出列出的标签：输入 loss 再按 Enter，"
        "即可比较 train/loss 和 eval/loss。"
    ),
    "share": "比例",
    "E{n}": "E{n}",
    "E1, E2, …: each expert's share of the tokens the routers sent, at each update (averaged over the layers). "
    "Dashed: 1/N, every expert's share when the load is balanced. With the balance loss at 0 a few experts "
    "often end up with most of the tokens.": (
        "E1、E2……：每次更新时，路由器送给各专家的词元比例（各层平均）。虚线：1/N，负载均衡时每个专家的比例。"
        "负载均衡损失设为 0 时，往往少数几个专家会分到大部分词元。"
    ),
    "mean balance loss": "平均负载均衡损失",
    "Loss (balance loss: 1 = even)": "损失（负载均衡损失：1 = 均衡）",
    # the model panel
    "Decoder-only Transformer (GPT: predicts the next token)": "仅解码器 Transformer（GPT：预测下一个词元）",
    "Encoder-only Transformer (BERT: fills in masked tokens)": "仅编码器 Transformer（BERT：补全掩码词元）",
    "N = {n} decoder layers: masked self-attention and feed-forward, no encoder and no cross-attention": (
        "N = {n} 层解码器：带掩码的自注意力和前馈网络，没有编码器，也没有交叉注意力"
    ),
    "N = {n} encoder layers: self-attention that looks both ways, no decoder": (
        "N = {n} 层编码器：双向的自注意力，没有解码器"
    ),
    "a classifier on the first position ({k} classes)": "第一个位置上接一个分类器（{k} 类）",
    "Mixture of experts: {n} expert FFNs in each layer; a router sends each token to {k} of them "
    "(balance loss × {w:g})": (
        "混合专家：每层 {n} 个专家前馈网络，路由器把每个词元送给其中 {k} 个（负载均衡损失 × {w:g}）"
    ),
    "{active} active per token ({share:.0f}%)": "每个词元实际用到 {active}（{share:.0f}%）",
    "{kind} ({n} pieces, one vocabulary)": "{kind}（{n} 个词元，一个词表）",
    "output projection tied to the token embedding": "输出投影与词元嵌入共享权重",
    "({n} experts and the router)": "（{n} 个专家和路由器）",
    "token embedding": "词元嵌入",
    "positions (learned)": "位置（可学习）",
    "segment embedding": "片段嵌入",
    "masked-LM head": "掩码语言模型头",
    "classification head": "分类头",
    "encoder relative bias (T5)": "编码器相对位置偏置（T5）",
    "decoder relative bias (T5)": "解码器相对位置偏置（T5）",
    # the model map
    "Inputs (the text so far)": "输入（到目前为止的文本）",
    "Inputs (some tokens masked)": "输入（部分词元被掩码）",
    "Next-token probabilities": "下一个词元的概率",
    "Masked-token probabilities": "掩码词元的概率",
    "Token embedding": "词元嵌入",
    "MLM head": "MLM 头",
    "Masked-LM head: dense, GELU, LayerNorm": "掩码语言模型头：全连接、GELU、LayerNorm",
    "Transforms each position's vector before the output layer guesses the masked token.": (
        "在输出层猜掩码词元之前，先变换每个位置的向量。"
    ),
    "Experts (MoE)": "专家（MoE）",
    "Mixture of experts: a router and N expert FFNs": "混合专家：一个路由器和 N 个专家前馈网络",
    "A router sends each token to k of the N expert FFNs and mixes their outputs by its probabilities.": (
        "路由器把每个词元送给 N 个专家前馈网络中的 k 个，并按它给出的概率混合它们的输出。"
    ),
    "{n} experts · top-{k} · router": "{n} 个专家 · 前 {k} 个 · 路由器",
    "experts": "个专家",
    "every expert is the paper's FFN (d_ff = {dff}); each token is computed by {k} of them.": (
        "每个专家都是论文中的前馈网络（d_ff = {dff}）；每个词元由其中 {k} 个计算。"
    ),
    "With k = 1 the expert's output is weighted by its own probability (Switch Transformer): the weight depends "
    "on the router, so the task loss trains it.": (
        "k = 1 时专家的输出乘以它自己的概率（Switch Transformer）：权重取决于路由器，所以任务损失会训练它。"
    ),
    "With k ≥ 2 the k chosen probabilities are renormalised to sum to 1 (GShard, Mixtral).": (
        "k ≥ 2 时把选中的 k 个概率重新归一化到总和为 1（GShard、Mixtral）。"
    ),
    "f<sub>i</sub> is the share of the tokens sent to expert i and P<sub>i</sub> its mean router probability; "
    "the balance loss is 1 when the tokens (or the probabilities) are spread evenly and grows when tokens and "
    "probability pile on the same experts. Training adds its mean over the MoE layers, times its weight, to the "
    "loss.": (
        "f<sub>i</sub> 是送到专家 i 的词元比例，P<sub>i</sub> 是路由器给它的平均概率；"
        "词元（或概率）分布均匀时负载均衡损失等于 1，词元和概率都集中到同一些专家上时它变大。"
        "训练把它在各 MoE 层上的平均值乘以它的权重加进损失。"
    ),
    "Its weight here: {w:g}.": "这里它的权重：{w:g}。",
    "the experts and the router": "专家和路由器",
    "T5 relative bias, in attention": "T5 相对位置偏置，在注意力中",
    "buckets of offsets, wider for distant positions (the scale set by the distance {d}); one bias per head and "
    "bucket, learned.": "个偏移桶，越远的位置桶越宽（尺度由距离 {d} 决定）；每个头、每个桶各有一个可学习的偏置。",
    "on top of the encoder": "在编码器之上",
    "Q, K and V all come from the text so far, as the layer below left it: each token looks at itself and "
    "the tokens before it.": "Q、K、V 都来自经过下面各层处理后的已有文本：每个词元只看它自己和它之前的词元。",
    "Q, K and V all come from this layer's input: the whole text, masked tokens included, as the layer below "
    "left it; every position looks at every other.": (
        "Q、K、V 都来自这一层的输入：经过下面各层处理后的整段文本，包括掩码词元；每个位置都看所有其他位置。"
    ),
    "sentence A or B of a pair (BERT's segments).": "句对中的句子 A 或 B（BERT 的片段）。",
    "one score (logit) per piece of the vocabulary.": "词表中每个词元一个分数（logit）。",
    "pieces: one probability each, adding up to 1.": "个词元：每个一个概率，总和为 1。",
    "x is the output of the masked-LM head.": "x 是掩码语言模型头的输出。",
    "Tied to the token embedding: the matrix is counted once, with the embedding; only the bias b is the "
    "output layer's own.": "与词元嵌入共享权重：这个矩阵只计一次，算在嵌入里；只有偏置 b 属于输出层自己。",
    "the output layer then scores every piece at each masked position.": "然后输出层在每个掩码位置给每个词元打分。",
    "Next-sentence prediction reads the first position through its own classifier.": (
        "下一句预测通过自己的分类器读取第一个位置。"
    ),
    "Generation takes the most likely piece, or draws one at random, and feeds it back in.": (
        "生成时取概率最大的词元，或随机抽取一个，再把它接回输入。"
    ),
    "At each masked position: the model's guess of the hidden piece.": "在每个掩码位置：模型对被藏起来的词元的猜测。",
}
