"""“What am I looking at?” for the Training panel and the model map, per family: the translator's texts are
``HELP["training"]`` and ``HELP["map"]`` (explorer/help.py); a decoder-only (GPT) or encoder-only (BERT) model gets
its own, and a model with experts or with T5's relative positions gets a paragraph more (:func:`family_topic`)."""
# ruff: noqa: E501 — prose: Chinese characters count double towards the line length

from __future__ import annotations

from typing import TYPE_CHECKING

from model.families.registry import help_keys

if TYPE_CHECKING:
    from model.core.config import ModelConfig

# how the map is used, the same for every family (the end of each map topic)
MAP_USE = {
    "en": """<p>Point at a part to read what it does. Click it to keep its equation, with this model's numbers, beside
the drawing; double-click it, or press the button under its equation, to see it in the view that shows it: an
attention sublayer in the attention map (that layer), the embeddings and the positional encoding in the positional
lab, the output layer and the softmax in the Decoding panel (for BERT: Fill the mask). Click a closed layer to open
it.</p>""",
    "zh": """<p>把鼠标指向一个部件，可以读到它的作用。单击它，它的公式（带这个模型的具体数值）会留在图旁；双击它，或按公式下方的按钮，会在显示它的视图中打开它：注意力子层打开注意力图中的那一层，嵌入和位置编码打开位置编码实验室，输出层和 softmax 打开“解码”面板（BERT：“填空”）。单击一个收起的层可以展开它。</p>""",
}
FAMILY_HELP: dict[str, dict[str, str]] = {
    "map_use": MAP_USE,
    "training_decoder_only": {
        "en": """<p>A decoder-only model (GPT) learns from plain text by <b>updates</b>: it reads a batch of texts
and at every position predicts the next token; the <b>loss</b> is the cross-entropy of those predictions, and each
update nudges all the weights to make it a little smaller. One update is one <b>step</b>. The input is the text
behind &lt;bos&gt;, the target the same text one token further on (ending with &lt;eos&gt;), so every position
learns at once; the causal mask keeps each position from seeing the token it must predict.</p>
<p><b>Loss</b>: solid on training batches (faint: the raw curve before display smoothing), dashed on <b>valid</b>
texts never trained on — valid rising while training falls means memorising. Both curves use the training
criterion, <b>label smoothing</b> included (ε, 0.1 by default: the target gives ε of its weight to the whole
vocabulary), so that they compare; that is also why the loss cannot reach 0. <b>Token accuracy</b>: on training
batches, how often the likeliest next token is the right one.</p>
<p><b>Perplexity</b> (valid) = e<sup>loss</sup> per token, but of the <i>plain</i> cross-entropy −log P(next
token), without label smoothing: it measures the probabilities the model itself gives, not the smoothed target,
and it is the usual measure of a language model. A perplexity of 20 means the model is on average as unsure as if
it chose among 20 equally likely tokens; 1 would be always sure and right, and a model that gave every token the
same probability would score the size of the vocabulary. The paper notes that label smoothing hurts perplexity
(the model learns to be more unsure) but improves accuracy and BLEU.</p>
<p><b>Gradient norm</b>, <b>learning rate</b> and <b>warm-up</b> as for a translator: the gradient's size before
clipping; the rate rises during the warm-up steps, then falls like 1/√step.</p>""",
        "zh": """<p>仅解码器模型（GPT）从纯文本中学习，也是通过一次次<b>更新</b>：读入一批文本，在每个位置预测下一个词元；<b>损失</b>是这些预测的交叉熵，每次更新把所有权重朝“让它小一点”的方向微调。一次更新就是一<b>步</b>。输入是 &lt;bos&gt; 之后的文本，要预测的是同一段文本向后错开一个词元（以 &lt;eos&gt; 结尾），因此所有位置同时学习；因果掩码保证每个位置都看不到它要预测的词元。</p>
<p><b>损失</b>：实线是训练批次（浅色细线是“曲线平滑”之前的原始曲线），虚线是从未训练过的<b>验证</b>文本——验证损失上升而训练损失下降，说明模型在死记硬背。两条曲线都用训练时的损失，包括<b>标签平滑</b>（ε，默认 0.1：目标把 ε 的权重分给整个词表），这样两者才能比较；这也是损失降不到 0 的原因。<b>词元准确率</b>：在训练批次上，最可能的下一个词元正确的比例。</p>
<p><b>困惑度</b>（验证集）= 每个词元的 e<sup>损失</sup>，但这里用的是<i>不带</i>标签平滑的交叉熵 −log P(下一个词元)：它衡量的是模型自己给出的概率，而不是平滑后的目标，也是语言模型通常使用的指标。困惑度 20 表示模型平均而言就像在 20 个同样可能的词元中挑选一样没有把握；1 表示总是确定而且正确；给每个词元同样概率的模型，困惑度等于词表大小。论文指出，标签平滑会使困惑度变差（模型学得更不确定），但能提高准确率和 BLEU。</p>
<p><b>梯度范数</b>、<b>学习率</b>和<b>预热</b>与翻译模型相同：梯度范数是裁剪之前梯度的大小；学习率在预热步中上升，之后按 1/√步数 下降。</p>""",
    },
    "training_encoder_only": {
        "en": """<p>An encoder-only model (BERT) learns by <b>masked language modelling</b>: in each text 15% of the
tokens are chosen (80% of those replaced by &lt;mask&gt;, 10% by a random token, 10% left as they are) and the
model must say what was there, reading both sides. Only the chosen positions count. One update (a <b>step</b>)
reads a batch, measures the loss and nudges all the weights to make it smaller.</p>
<p><b>Loss</b>: the cross-entropy at the chosen positions, solid on training batches (faint: the raw curve before
display smoothing), dashed on <b>valid</b> texts never trained on (masked the same way at every evaluation, so the
points compare); label smoothing (ε) included, as in training. With next-sentence prediction its loss is added to
what is minimised, but not to this curve. <b>Token accuracy</b>: on training batches, how often the likeliest token
at a chosen position is the original one. <b>Masked-token accuracy</b> (valid): the same on the valid texts.
<b>Next-sentence accuracy</b> (valid, with NSP on): how often the head on the &lt;cls&gt; position says rightly
whether sentence B followed sentence A in the text or was drawn at random; half the pairs are each, so 50% is
chance.</p>
<p>RoBERTa (Liu et al., 2019) dropped next-sentence prediction: trained without it, on longer runs of text, it did
as well or better; NSP is off here unless you turn it on. <b>Gradient norm</b>, <b>learning rate</b> and
<b>warm-up</b> as for the other families.</p>""",
        "zh": """<p>仅编码器模型（BERT）通过<b>掩码语言模型</b>学习：每段文本中选出 15% 的词元（其中 80% 换成 &lt;mask&gt;，10% 换成随机词元，10% 保持不变），模型要看两边的内容说出原来是什么。只有被选中的位置计入损失。一次更新（一<b>步</b>）读入一批文本，算出损失，再把所有权重朝让它变小的方向微调。</p>
<p><b>损失</b>：被选中位置上的交叉熵；实线是训练批次（浅色细线是“曲线平滑”之前的原始曲线），虚线是从未训练过的<b>验证</b>文本（每次评估用同样的掩码，所以各点可以比较）；与训练时一样包括标签平滑（ε）。打开下一句预测时，它的损失也加进被最小化的目标，但不画进这条曲线。<b>词元准确率</b>：在训练批次上，被选中位置上最可能的词元正是原词元的比例。<b>掩码词元准确率</b>（验证集）：验证文本上的同一比例。<b>下一句预测准确率</b>（验证集，打开下一句预测时）：&lt;cls&gt; 位置上的输出头正确判断句子 B 在文本中紧跟在 A 后面、还是随机抽来的比例；两种情况各占一半，所以 50% 就是瞎猜的水平。</p>
<p>RoBERTa（Liu 等，2019）去掉了下一句预测：不用它、改在更长的连续文本上训练，效果持平或更好；这里除非你打开它，否则不用下一句预测。<b>梯度范数</b>、<b>学习率</b>和<b>预热</b>与其他家族相同。</p>""",
    },
    "training_moe": {
        "en": """<p><b>Experts</b> (Mixture-of-Experts). The loss plot also shows the <b>mean balance loss</b>,
N · Σ<sub>i</sub> f<sub>i</sub> · P<sub>i</sub> averaged over the MoE layers (f<sub>i</sub>: the share of the tokens
the router sent to expert i; P<sub>i</sub>: its mean router probability). It is 1 when the tokens (or the
probabilities) are spread evenly and grows when tokens and probability pile on the same experts. Training adds it,
times its weight (<i>Balance loss</i> in the settings), to what it minimises; the plotted loss stays the token loss
alone, so that runs with and without experts compare. The <b>experts' load</b> plot shows each expert's share of
the tokens at each update (dashed: 1/N, an even share); with the weight at 0 a few experts often end up with most
of the tokens. No token is dropped here: there is no capacity factor, so an expert takes every token sent to it,
however many (large systems give each expert a capacity, and the tokens beyond it skip the layer). The model stores
N experts' parameters in each layer, but each token passes through k of them: the Model panel gives both
counts.</p>""",
        "zh": """<p><b>专家</b>（混合专家）。损失图还画出<b>平均负载均衡损失</b>：N · Σ<sub>i</sub> f<sub>i</sub> · P<sub>i</sub> 在各 MoE 层上的平均（f<sub>i</sub>：路由器送给专家 i 的词元份额；P<sub>i</sub>：它的平均路由概率）。词元（或概率）分布均匀时它等于 1，词元和概率都集中到同一些专家上时它变大。训练把它乘以权重（设置中的“负载均衡损失”）加进被最小化的目标；画出的损失仍然只是词元损失，这样有专家和没有专家的运行才能比较。<b>专家负载</b>图画出每次更新时每个专家分到的词元比例（虚线：1/N，平均份额）；权重为 0 时，往往少数几个专家分到大部分词元。这里不丢弃任何词元：没有容量因子，一个专家接收送来的所有词元，不论多少（大型系统给每个专家设定容量，超出容量的词元跳过这一层）。模型在每层存储 N 个专家的参数，但每个词元只经过其中 k 个：“模型”面板给出这两个数。</p>""",
    },
    "map_decoder_only": {
        "en": """<p>The paper's Figure 1, redrawn for the decoder-only model (GPT) that is open now: one stack, the
paper's <b>decoder</b> without its cross-attention, because there is no encoder to read. The text so far
(&lt;bos&gt;, the prompt and what has been written) is embedded and given its positions; then come N identical
layers, each a <b>masked self-attention</b> (every position looks at itself and the positions before it) and the
position-wise <b>feed-forward network</b>, each wrapped in a residual connection and a layer normalisation, drawn
where this model has it (Post-LN: Add &amp; Norm after the sublayer; Pre-LN: a LayerNorm before it, and a final
LayerNorm on top of the stack). On top, the linear layer and the softmax give every position a probability for each
possible next token.</p>""",
        "zh": """<p>论文的图 1，按当前打开的仅解码器模型（GPT）重画：只有一个堆栈，即论文的<b>解码器</b>去掉交叉注意力，因为没有编码器可读。到目前为止的文本（&lt;bos&gt;、提示词和已经写出的部分）先变成嵌入并带上位置信息；然后是 N 个相同的层，每层由<b>带掩码的自注意力</b>（每个位置只看它自己和它之前的位置）和逐位置<b>前馈网络</b>组成，每个子层都包在残差连接和层归一化之中，归一化画在这个模型放它的地方（Post-LN：子层之后的“相加与归一化”；Pre-LN：子层之前一个 LayerNorm，堆栈最上面再加一个最终 LayerNorm）。最上面的线性层和 softmax 在每个位置给出每个可能的下一个词元的概率。</p>""",
    },
    "map_encoder_only": {
        "en": """<p>The paper's Figure 1, redrawn for the encoder-only model (BERT) that is open now: one stack, the
paper's <b>encoder</b>, with no decoder and no cross-attention. The text (with &lt;mask&gt; where a token is
hidden) is embedded and given its positions, and BERT's segment embedding (sentence A or B) is added; then come N
identical layers, each a <b>self-attention</b> that looks both ways (no mask: every position sees every other) and
the position-wise <b>feed-forward network</b>, each wrapped in a residual connection and a layer normalisation. On
top, the <b>masked-LM head</b> (dense, GELU, LayerNorm), then the linear layer and the softmax give each masked
position a probability for every piece of the vocabulary. With next-sentence prediction a classifier reads the
first position (&lt;cls&gt;).</p>""",
        "zh": """<p>论文的图 1，按当前打开的仅编码器模型（BERT）重画：只有一个堆栈，即论文的<b>编码器</b>，没有解码器，也没有交叉注意力。文本（被藏起来的词元处写 &lt;mask&gt;）先变成嵌入并带上位置信息，再加上 BERT 的片段嵌入（句子 A 或 B）；然后是 N 个相同的层，每层由双向的<b>自注意力</b>（不带掩码：每个位置都看所有位置）和逐位置<b>前馈网络</b>组成，每个子层都包在残差连接和层归一化之中。最上面是<b>掩码语言模型头</b>（全连接、GELU、LayerNorm），然后线性层和 softmax 在每个掩码位置给词表中的每个词元一个概率。打开下一句预测时，一个分类器读取第一个位置（&lt;cls&gt;）。</p>""",
    },
    "map_moe": {
        "en": """<p><b>Experts</b> (Mixture-of-Experts): in each layer the feed-forward box is a <b>router</b> and N
expert FFNs, each the paper's FFN. The router (x W<sub>r</sub> + b<sub>r</sub>, then a softmax) gives each token a
probability for each expert and sends it to the k most probable; with k = 1 the expert's output is weighted by its
own probability p<sub>i</sub> (Switch Transformer), with k ≥ 2 the k probabilities are renormalised to sum to 1
(GShard, Mixtral). The model <b>stores</b> N experts' parameters in every layer, but each token is
<b>computed</b> by k of them: the Model panel gives both counts (“active per token”). There is no <b>capacity</b>
here: an expert takes every token sent to it, however many, so no token is dropped (large systems cap each expert's
tokens per batch at a capacity factor times an even share, and the tokens beyond it skip the layer). Training adds
a <b>balance loss</b>, N · Σ<sub>i</sub> f<sub>i</sub> · P<sub>i</sub>: 1 when the tokens (or the probabilities)
are spread evenly, larger when tokens and probability pile on the same experts, so that the router keeps using
them all.</p>""",
        "zh": """<p><b>专家</b>（混合专家）：每层的前馈方框是一个<b>路由器</b>加 N 个专家前馈网络，每个专家都是论文中的前馈网络。路由器（x W<sub>r</sub> + b<sub>r</sub>，再接 softmax）给每个词元对每个专家一个概率，把它送往概率最高的 k 个专家；k = 1 时专家的输出乘以它自己的概率 p<sub>i</sub>（Switch Transformer），k ≥ 2 时把那 k 个概率重新归一化到总和为 1（GShard、Mixtral）。模型在每层<b>存储</b> N 个专家的参数，但每个词元只由其中 k 个<b>计算</b>：“模型”面板给出这两个数（“每个词元实际用到”）。这里没有<b>容量</b>限制：一个专家接收送来的所有词元，不论多少，所以不丢弃任何词元（大型系统把每个专家每批能接收的词元数限制为容量因子乘以平均份额，超出的词元跳过这一层）。训练时加上<b>负载均衡损失</b> N · Σ<sub>i</sub> f<sub>i</sub> · P<sub>i</sub>：词元（或概率）分布均匀时为 1，词元和概率都集中到同一些专家上时变大，这样路由器会一直用到所有专家。</p>""",
    },
    "map_t5": {
        "en": """<p><b>T5's relative positions</b> (Raffel et al., 2020). Nothing is added to the embeddings; every
self-attention adds to its scores q·k/√d<sub>k</sub> a learned number b per head, looked up by the <b>bucket</b>
of the offset key − query; one table per stack, shared by its layers; cross-attention gets none. The buckets (T5's
32, max_distance 128): the encoder's are split between keys at or before the query (16) and keys after it (16). On
each side the first half have one offset each — 0, −1, …, −7 before the query (8 exact offsets, 0 included) and
+1 … +7 after it (7) — and the other half cover larger distances in buckets whose width grows logarithmically
(8–11, 12–15, 16–22, …), the last holding every distance from 91 on. The decoder's 32 all look back: 0 … −15 one
each (16), then 16 logarithmic buckets, the last from −113 on (the positional lab draws them).</p>
<p>Besides positions, T5 itself normalises before each sublayer with an RMS norm (no mean subtracted, no β),
computes q·k without dividing by √d<sub>k</sub> (the factor is folded into the initialisation of
W<sup>Q</sup>), does not scale its embeddings and has no biases in its linear layers; it was pre-trained by filling
in dropped spans of text. This app changes only the positions: it scales as the paper does, with its LayerNorm
(Pre- or Post-LN, as set), q·k/√d<sub>k</sub> and embeddings × √d<sub>model</sub>.</p>""",
        "zh": """<p><b>T5 的相对位置</b>（Raffel 等，2020）。嵌入上不加任何东西；每个自注意力在得分 q·k/√d<sub>k</sub> 上加一个学到的数 b：每个头一个，按偏移 键 − 查询 所在的<b>桶</b>查表；每个堆栈一张表，由它的各层共用；交叉注意力没有。桶的布局（T5 的 32 个桶，max_distance 128）：编码器的桶分给查询之前（含查询本身）的键（16 个）和之后的键（16 个）。每一边的前一半桶各对应一个偏移——查询之前是 0、−1、…、−7（8 个精确的偏移，含 0），之后是 +1 … +7（7 个）——后一半桶覆盖更远的距离，桶宽按对数增长（8–11、12–15、16–22……），最后一个桶包含 91 及更远的所有距离。解码器的 32 个桶只看之前的键：0 … −15 各一个桶（16 个），然后是 16 个对数桶，最后一个从 −113 开始（位置编码实验室画出了这些桶）。</p>
<p>除了位置之外，T5 本身还在每个子层之前用 RMS 归一化（不减均值，没有 β），计算 q·k 时不除以 √d<sub>k</sub>（这个因子并入了 W<sup>Q</sup> 的初始化），不缩放嵌入，线性层也没有偏置；它通过补全文本中被删去的若干段文字进行预训练。本程序只改变位置：缩放与论文相同，仍用论文的 LayerNorm（按设置为 Pre-LN 或 Post-LN）、q·k/√d<sub>k</sub> 和乘以 √d<sub>model</sub> 的嵌入。</p>""",
    },
}


def family_topic(key: str, cfg: ModelConfig) -> str:
    """The help topic of the panel ``key`` ("training" or "map") for the model ``cfg``: its family's text, then the
    paragraphs of its experts and of T5's relative positions where it has them, joined by "+" (as
    :func:`explorer.help.help_text` reads it)."""
    family, *options = help_keys(cfg, key)  # the family's topic, then its options' (model.families.registry)
    parts = [family]
    if key == "map" and family != key:  # a family's own map text; the translator's (HELP["map"]) ends with it
        parts.append("map_use")
    parts += options
    return "+".join(p for p in parts if p == key or p in FAMILY_HELP)
