"""简体中文 for the interface strings of the model families' inspecting views (English source string → Chinese)."""
# ruff: noqa: E501 — prose: Chinese characters count double towards the line length

ZH_INSPECTING: dict[str, str] = {
    # a heatmap that zooms (a long text's attention map, the attribution map)
    "Wheel: zoom in and out · drag: move · double click: the whole map": "滚轮：放大或缩小 · 拖动：移动 · 双击：显示整张图",
    # the attention panel: kinds and sentences per family
    "Self-attention (causal)": "自注意力（带因果掩码）",
    "Self-attention (both ways)": "自注意力（双向）",
    "Encoder–decoder": "编码器–解码器",
    "Decoder-only (GPT)": "仅解码器（GPT）",
    "Encoder-only (BERT)": "仅编码器（BERT）",
    "A prompt and its continuation": "提示词及其续写",
    "A text of your own": "自己输入的文本",
    "Continuation": "续写",
    "empty: the model's own continuation": "留空：使用模型自己的续写",
    "continuation (empty: the model's own)": "续写（留空：使用模型自己的）",
    "continuation: the model's own greedy one": "续写：模型自己的贪心续写",
    "Type a prompt (and, if you like, its continuation) and press Show.": "输入提示词（也可以再输入续写），然后按“显示”。",
    "Type a text (write <mask> where a word is hidden) and press Show.": "输入一段文本（在要藏起来的词的位置写 <mask>），然后按“显示”。",
    "Rows: positions of the text, labelled “read → predicts”; columns: the tokens read (keys); each row sums to 1. "
    "Hatched cells are masked: a position may not look at later ones, because the next token, the one it must "
    "predict, is there.": "行：文本中的各个位置，标为“读入 → 预测”；列：已读入的词元（键）；每行之和为 1。带斜线的格子被掩码屏蔽："
    "一个位置不能看后面的位置，因为下一个词元，也就是它要预测的那个，就在那里。",
    "Rows: positions (queries); columns: positions (keys); each row sums to 1. No cell is hatched: the attention "
    "mask hides no position, every token sees the whole text, both ways. A <mask> token is another thing: a word "
    "hidden from the input, which the model guesses from what its row gathers.": "行：各个位置（查询）；列：各个位置"
    "（键）；每行之和为 1。没有带斜线的格子：注意力掩码不屏蔽任何位置，每个词元都能看到整段文本，前后两个方向都能看。"
    "<mask> 词元是另一回事：它是从输入中藏起来的词，模型根据它那一行汇集的信息来猜。",
    "Following the fill-mask panel": "跟随“填空”面板",
    "Type a sentence in the fill-mask panel; its attention appears here.": "在“填空”面板中输入一个句子；它的注意力会显示在这里。",
    "Update": "更新",
    "Draw the map again with the model's current weights": "用模型当前的权重重新画这张图",
    "the model is now at step {now}: press Update to redraw the map": "模型现在已到第 {now} 步：按“更新”重画这张图",
    "step 0: nothing written yet — press Step ▶ in the Decoding panel": "第 0 步：还没有写出词元——在“解码”面板中按“单步 ▶”",
    "previous sentence: the one typed now is decoded at Decode or Step ▶": (
        "上一个句子：现在输入的句子要按“解码”或“单步 ▶”才会解码"
    ),
    "previous sentence: the one typed now is read at Fill the mask": "上一个句子：现在输入的句子要按“填空”才会读入",
    "Router (experts)": "路由器（专家）",
    # the router page
    "MoE layer": "混合专家层",
    "What does the router do?": "路由器做什么？",
    "Router probabilities: tokens × experts": "路由概率：词元 × 专家",
    "token": "词元",
    "expert": "专家",
    "Layer {n}": "第 {n} 层",
    "{stack}, layer {n}": "{stack}，第 {n} 层",
    "chosen, weight {w}": "被选中，权重 {w}",
    "Show a sentence: the router's choices for its tokens appear here.": "先显示一个句子：路由器为它的词元所做的选择会出现在这里。",
    "The router gives each token a probability for each expert (softmax over a row, which sums to 1) and "
    "sends it to the most probable, outlined; the layer passes that expert's output on, weighted by its "
    "probability (Switch Transformer), so the task itself teaches the router. Here k = 1 of N = {n} experts.": (
        "路由器给每个词元对每个专家一个概率（对一行做 softmax，每行之和为 1），把词元送往概率最高的那个专家（带框的格子）；"
        "这一层把该专家的输出乘以它的概率再传下去（Switch Transformer），所以任务本身就能训练路由器。"
        "这里 k = 1，N = {n} 个专家。"
    ),
    "The router gives each token a probability for each expert (softmax over a row, which sums to 1) and "
    "sends it to the k most probable, outlined; the layer adds their outputs, weighted by those "
    "probabilities renormalised to sum to 1 (GShard, Mixtral). Here k = {k} of N = {n} experts.": (
        "路由器给每个词元对每个专家一个概率（对一行做 softmax，每行之和为 1），把词元送往概率最高的 k 个专家（带框的格子）；"
        "这一层把这些专家的输出相加，权重是那几个概率重新归一化到总和为 1（GShard、Mixtral）。"
        "这里 k = {k}，N = {n} 个专家。"
    ),
    "Tokens each expert got from this input ({t} tokens × k = {total}): {loads}.": "这条输入中每个专家分到的词元数"
    "（{t} 个词元 × k = {total}）：{loads}。",
    "{n} expert(s) got none: they learn nothing from this input.": "有 {n} 个专家一个词元也没分到：它们从这条输入中学不到任何东西。",
    # the positional lab: T5's buckets
    "T5: the bucket of each offset key − query": "T5：每个偏移 键 − 查询 所在的桶",
    "T5: the bucket of each query and key position": "T5：每对查询位置和键位置所在的桶",
    "offset key − query": "偏移 键 − 查询",
    "bucket": "桶",
    "query position": "查询位置",
    "key position": "键位置",
    "encoder (both ways)": "编码器（双向）",
    "decoder (looks back)": "解码器（只看之前的键）",
    "The model's learned position table": "模型学到的位置表",
    "This lab has no picture of this model's positions ({kind}).": "这个实验室还没有这种位置编码（{kind}）的图示。",
    "This model has no positional encoding: nothing is added to its embeddings and nothing in its attention "
    "depends on where a token is. An encoder without positions reads its input as a set: shuffle the tokens and "
    "its outputs are shuffled with them. (A decoder with a causal mask still learns something of order from it: "
    "later positions see more tokens.) The other tabs show the sinusoids the paper adds.": "这个模型没有位置编码："
    "嵌入上什么也不加，注意力里也没有任何东西取决于词元所在的位置。没有位置的编码器把输入当作一个集合：打乱词元，"
    "它的输出也跟着一起打乱。（带因果掩码的解码器仍能从掩码中学到一些顺序：越靠后的位置看到的词元越多。）"
    "其他标签页显示的是论文加上的正弦编码。",
    "This model adds nothing to its embeddings: each self-attention adds a learned number per head to its scores, "
    "chosen by the bucket of the offset key − query (T5's relative position bias; cross-attention gets none). Small "
    "offsets have a bucket each; larger ones share buckets whose width grows logarithmically, on a scale set by the "
    "distance {far}. One table of {n} buckets × heads per stack, shared by its layers.": "这个模型不往嵌入上加任何东西："
    "每个自注意力按偏移 键 − 查询 所在的桶，给每个头的得分加上一个学到的数（T5 的相对位置偏置；交叉注意力没有）。"
    "小的偏移各有一个桶；较大的偏移共用桶，桶宽按对数增长，尺度由距离 {far} 决定。每个堆栈一张 {n} 个桶 × 头数 的表，"
    "由它的各层共用。",
    "The encoder's buckets are split between keys before and after the query: {b} exact offsets before the query (0 "
    "included), {a} after; each side's last bucket holds every distance from {s} on.": "编码器的桶分给查询之前和之后的键："
    "查询之前 {b} 个精确的偏移（含 0），之后 {a} 个；每一边的最后一个桶包含 {s} 及更远的所有距离。",
    "The decoder's all look back: {d} exact offsets (0 included); the last bucket holds every distance from {s} on.": (
        "解码器的桶只看之前的键：{d} 个精确的偏移（含 0）；最后一个桶包含 {s} 及更远的所有距离。"
    ),
    "T5: each head's learned bias, per offset key − query": "T5：每个注意力头学到的偏置，按偏移 键 − 查询",
    "bias": "偏置",
    # the head functions beside the entropy over training
    "Head functions of the probe over training": "训练过程中探针句上各注意力头的功能",
    "score": "得分",
    "Function": "功能",
    "previous token": "前一个词元",
    "diagonal alignment": "对角对齐",
    "attention to the first token": "关注第一个词元",
    "attention to <eos>": "关注 <eos>",
    "induction": "归纳",
    "No repeated token in the probe: induction needs a token that appears twice, not side by side.": (
        "探针句中没有重复的词元：归纳需要一个出现两次、且两次不相邻的词元。"
    ),
    "No <eos> among the keys of the probe.": "探针句的键中没有 <eos>。",
    "Not defined for this probe.": "对这个探针句没有定义。",
}
