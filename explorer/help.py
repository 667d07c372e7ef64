"""“What am I looking at?” — a short explanation of each panel, for students, in both languages."""

from __future__ import annotations

import re

from PySide6.QtCore import QEvent, QObject, QPoint, QPointF, QRect, QRectF, QSize, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QIcon,
    QKeySequence,
    QLinearGradient,
    QPainter,
    QPaintEvent,
    QPalette,
    QPen,
    QPixmap,
    QResizeEvent,
    QShortcut,
)
from PySide6.QtWidgets import (
    QAbstractButton,
    QApplication,
    QDockWidget,
    QFrame,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QStyle,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from explorer.help_ablation import ABLATION_HELP
from explorer.help_families import FAMILY_HELP, MAP_USE
from explorer.i18n import language, tr

HELP: dict[str, dict[str, str]] = {
    "training": {
        "en": """<p>The model learns by <b>updates</b>: it reads a batch of sentence pairs, predicts every target
token, measures how wrong it was (the <b>loss</b>, a cross-entropy) and nudges all its weights to be a little less
wrong. One update is one <b>step</b>. It learns with <b>teacher forcing</b>: the decoder reads the correct target
shifted right by one (&lt;bos&gt; y<sub>1</sub> … y<sub>n</sub>) and predicts it unshifted (y<sub>1</sub> …
y<sub>n</sub> &lt;eos&gt;), so all positions learn at once; the causal mask keeps each position from seeing the
token it must predict.</p>
<p><b>Loss</b>: solid on training batches (faint: the raw curve before display smoothing), dashed on
<b>valid</b> sentences never trained on — valid rising while training falls means memorising. <b>Token
accuracy</b>: how often the likeliest next token is right; <b>exact match</b> and <b>BLEU</b> judge translations
the model writes alone. <b>Gradient norm</b>: the gradient's size before clipping (Adam's step hardly depends on
it); spikes warn of trouble.</p>
<p><b>Label smoothing</b> (ε = 0.1): the target is not 100% the right token; ε is spread over the whole
vocabulary, so the model is never pushed to be completely sure. The loss therefore cannot reach 0 (its floor
grows with the vocabulary), but the paper found that accuracy and BLEU improve. <b>BLEU</b> (0–100) compares the
translations with their references: for n = 1 to 4 it takes the share of the outputs' n-grams (runs of n words;
for Chinese, characters) that the reference also has, each counted at most as often as the reference has it
(clipped); the four shares are combined as a geometric mean and multiplied by a brevity penalty, below 1 when the
outputs are shorter than the references. <b>Warm-up</b>: the learning rate rises during the first warm-up steps,
then falls like 1/√step; full-size steps at the start, while the weights are random and Adam's running averages
rest on a few gradients, can throw training off.</p>
<p>Try: train the same task with <b>Post-LN</b> and <b>Pre-LN</b> (see the Model panel's help), or with and
without label smoothing, and tick the earlier run to compare the curves. Pre-LN usually learns more smoothly at
first and depends less on warm-up.</p>""",
        "zh": """<p>模型通过一次次<b>更新</b>来学习：读入一批句对，预测译文中的每个词元，衡量错得有多远（<b>损失</b>，即交叉熵），
再把所有权重朝“少错一点”的方向微调。一次更新就是一<b>步</b>。训练使用<b>教师强制</b>：解码器读入右移一位的正确译文
（&lt;bos&gt; y<sub>1</sub> … y<sub>n</sub>），预测未移位的译文（y<sub>1</sub> … y<sub>n</sub> &lt;eos&gt;），
因此所有位置同时学习；因果掩码保证每个位置都看不到它要预测的词元。</p>
<p><b>损失</b>：实线是训练批次（浅色细线是“曲线平滑”之前的原始曲线），虚线是从未训练过的<b>验证</b>句子——验证损失上升而训练损失下降，
说明模型在死记硬背。<b>词元准确率</b>：最可能的下一个词元正确的比例；<b>完全匹配</b>和 <b>BLEU</b> 评价模型独立写出的译文。
<b>梯度范数</b>：裁剪之前梯度的大小（Adam 的步长几乎与它无关）；突然的尖峰预示问题。</p>
<p><b>标签平滑</b>（ε = 0.1）：训练时的目标分布并不把百分之百给正确词元，而是把 ε 平均分给整个词表，这样模型永远不会被推向完全确定。
因此损失不会降到 0（其下限随词表增大而升高），但论文发现准确率和 BLEU 都会提高。<b>BLEU</b>（0–100）把译文与参考译文比较：
对 n = 1 到 4，计算输出中的 n 元组（连续 n 个词；中文按字计）有多大比例也出现在参考译文中，每个 n 元组的计数不超过它在参考译文中
出现的次数（截断）；四个比例取几何平均，再乘以简短惩罚——输出比参考译文短时它小于 1。<b>预热</b>：学习率在最初的预热步中上升，
之后按 1/√步数 下降；开始时权重是随机的，Adam 的滑动平均也只基于很少几个梯度，这时迈出全尺寸的步子可能让训练失控。</p>
<p>试一试：用 <b>Post-LN</b> 和 <b>Pre-LN</b>（见“模型”面板的说明）或有无标签平滑各训练一次同一任务，勾选之前的运行来比较曲线。
Pre-LN 在开始阶段通常学得更平稳，也不那么依赖预热。</p>""",
    },
    "decoding": {
        "en": """<p>A translation is written <b>one token at a time</b>. At every step the model reads the source and the
tokens it has written so far and gives a probability to every possible next token; the bars show the ten most
likely. <b>Greedy</b> decoding always takes the most likely one.</p>
<p><b>Beam search</b> keeps the <i>k</i> best partial translations. A node shows the <b>log-probability</b> log P
of the prefix it ends (negative; nearer 0 is likelier); blue kept, grey pruned, green finished. Each token adds a
negative log, so raw log P is biased toward short outputs; finished ones are ranked by ★ = log P /
((5 + length)/6)<sup>α</sup>, a divisor that grows with the length (above 1 beyond one token), so it raises
longer hypotheses more.
The paper used α = 0.6 with beam 4.</p>
<p>The heat strip shows where each head of a decoder layer looked in the source while choosing this token.</p>""",
        "zh": """<p>译文是<b>一次一个词元</b>写出来的。每一步，模型读入原文和已经写出的词元，给每个可能的下一个词元一个概率；条形图显示概率最高的十个。
<b>贪心</b>解码总是取最可能的那个。</p>
<p><b>束搜索</b>保留 <i>k</i> 个最好的部分译文。节点上的数字是以它结尾的前缀的<b>对数概率</b> log P（负数，越接近 0 越可能）；
蓝色保留，灰色剪掉，绿色结束。每个词元都加上一个负的对数，所以原始 log P 偏向短的输出；结束的假设按
★ = log P / ((5 + 长度)/6)<sup>α</sup> 排序，这个除数随长度增大（超过一个词元时大于 1），因此较长假设的得分被提得更多。论文使用 α = 0.6、束宽 4。</p>
<p>热力条显示在选择这个词元时，某一解码层的每个注意力头在原文中看向了哪里。</p>""",
    },
    "attention": {
        "en": """<p>Attention lets every position gather information from other positions. Each <b>row</b> belongs to
one position (the <b>query</b>); the colours along the row show how much it takes from each <b>key</b> position
(the columns). A row's weights are softmax(q·k/√d<sub>k</sub>) and always sum to 1. Why divide by
√d<sub>k</sub>? A dot product of d<sub>k</sub> numbers grows with d<sub>k</sub> (for random vectors its spread
grows like √d<sub>k</sub>); unscaled, the softmax would put nearly all the weight on one key, where its gradients
are tiny.</p>
<p><b>Encoder self-attention</b>: source tokens looking at source tokens. <b>Cross-attention</b>: the queries
come from the decoder (the translation so far), the keys and values from the encoder's output (the source); for a
good translation model it often forms a word alignment, even across reordering. <b>Decoder self-attention</b>
has a <b>causal mask</b>: the upper triangle is empty because a position may not look at tokens that come later —
when the model translates, those tokens do not exist yet, so in training it must not peek at them either.</p>
<p>Each layer has several <b>heads</b>, each with its own W<sup>Q</sup>, W<sup>K</sup>, W<sup>V</sup>, so
different heads can look at different things; their outputs are concatenated and multiplied by W<sup>O</sup>,
which mixes them back into one d<sub>model</sub>-wide vector. Many rows put much of their weight on &lt;eos&gt;
(the end of every source) or &lt;bos&gt;: a row must spend all its weight somewhere, and a token that every
sentence has is a harmless place for a head that has nothing to fetch. <b>Attention over training</b> plots each
head's entropy, −Σ w ln w averaged over the rows, in nats: 0 when a row puts all its weight on one key, ln n when
it spreads evenly over n keys (ln 10 ≈ 2.3). Beside it, <b>Head functions</b> plots how strongly each head does a
known job, as a mean weight between 0 and 1: <b>previous token</b>, the weight row i puts on key i − 1; <b>diagonal
alignment</b> (cross-attention), the weight within one key of the diagonal i·S/T, which a copy or translation model
learns (1 for a perfectly diagonal map); <b>attention to the first token</b> and <b>to &lt;eos&gt;</b>, the weight on
those keys; <b>induction</b> (causal self-attention, GPT's), at a token seen before, the weight on the token that
followed it then (“A B … A → look at B”), undefined when no token of the probe repeats. The Q·K explainer works one
row out with real numbers.</p>
<p>Which kinds of attention there are depends on the model's <b>family</b>. The button at the right end of the
Layer and Head row names it and says what GPT (decoder-only), BERT (encoder-only) and T5 change from the paper's
model. A model with experts has a
<b>Router</b> tab: where each token is sent.</p>""",
        "zh": """<p>注意力让每个位置从其他位置汇集信息。每一<b>行</b>属于一个位置（<b>查询</b>），这一行上的颜色表示它从每个<b>键</b>位置
（各列）取了多少。一行的权重是 softmax(q·k/√d<sub>k</sub>)，总和恒为 1。为什么要除以 √d<sub>k</sub>？d<sub>k</sub>
个数的点积随 d<sub>k</sub> 增大（对随机向量，它的离散程度按 √d<sub>k</sub> 增长）；不缩放的话，softmax
会把几乎全部权重放到一个键上，而那里的梯度极小。</p>
<p><b>编码器自注意力</b>：原文词元看原文词元。<b>交叉注意力</b>：查询来自解码器（已写出的译文），键和值来自编码器的输出（原文）；
对于好的翻译模型，它常常形成词对齐，即使语序发生了调换。<b>解码器自注意力</b>带<b>因果掩码</b>：右上三角为空，
因为一个位置不能看后面的词元——模型翻译时那些词元还不存在，所以训练时也不许偷看。</p>
<p>每一层有多个<b>注意力头</b>，各有自己的 W<sup>Q</sup>、W<sup>K</sup>、W<sup>V</sup>，因此不同的头可以关注不同的东西；
各头的输出拼接后乘以 W<sup>O</sup>，重新混合成一个 d<sub>model</sub> 维的向量。很多行把大量权重放在 &lt;eos&gt;
（每个原文的结尾）或 &lt;bos&gt; 上：一行的权重必须全部分配出去，而每句都有的词元，正好是没有东西可取的头安放权重的无害之处。
<b>训练过程中的注意力</b>标签页画出每个头的熵：−Σ w ln w 在各行上的平均，单位为奈特；一行把全部权重放在一个键上时为 0，
在 n 个键上平均分配时为 ln n（ln 10 ≈ 2.3）。旁边的<b>各注意力头的功能</b>图画出每个头做某种已知工作的程度，
即 0 到 1 之间的平均权重：<b>前一个词元</b>，第 i 行放在键 i − 1 上的权重；<b>对角对齐</b>（交叉注意力），落在对角线 i·S/T
前后一个键以内的权重，复制或翻译模型会学会它（完全对角的图为 1）；<b>关注第一个词元</b>和<b>关注 &lt;eos&gt;</b>，
放在这些键上的权重；<b>归纳</b>（带因果掩码的自注意力，即 GPT 的），在一个之前出现过的词元处，
放在它上次出现时后面那个词元上的权重（“A B … A → 看 B”），探针句中没有重复的词元时没有定义。Q·K 讲解器用真实数字把一行完整算一遍。</p>
<p>有哪几种注意力取决于模型的<b>家族</b>。“层”和“头”那一行右端的按钮写着模型的家族，并说明 GPT（仅解码器）、BERT（仅编码器）和 T5 相对论文的模型改了什么。带专家的模型还有一个<b>路由器</b>标签页：每个词元被送往哪里。</p>""",
    },
    "positional": {
        "en": """<p>Attention by itself ignores word order: shuffle the words and every position sees the same set.
So the paper adds a <b>positional encoding</b> to each word's embedding: a vector of sines and cosines of the
position at different frequencies, from fast (first dimensions) to very slow (last ones).</p>
<p>Why <b>sine and cosine</b> in pairs? By sin(a + b) = sin a cos b + cos a sin b and cos(a + b) = cos a cos b −
sin a sin b, moving k positions turns each (sin, cos) pair by the angle k·ω<sub>i</sub>: PE(pos + k) =
M<sub>k</sub> PE(pos), with the same rotation M<sub>k</sub> for every position (the “Shift by k” tab checks it).
The paper <i>hypothesised</i> that this lets the model learn to attend by <i>relative</i> position. The dot
product PE(p)·PE(q) depends only on p − q (the similarity tab).</p>
<p><b>Learned</b> positions, one vector per position, did about as well in the paper (Table 3, row E); it chose
the sinusoids because they may let the model <b>extrapolate</b> to sequences longer than any seen in training.
<b>RoPE</b> rotates the queries and keys instead, so positions enter q·k only through the offset n − m (what q
and k contain still matters).</p>""",
        "zh": """<p>注意力本身忽略词序：打乱词语，每个位置看到的仍是同一组词。因此论文给每个词元的嵌入加上<b>位置编码</b>：
由位置的正弦和余弦组成的向量，频率从快（前面的维度）到非常慢（后面的维度）。</p>
<p>为什么要成对使用<b>正弦和余弦</b>？由和角公式 sin(a + b) = sin a cos b + cos a sin b、cos(a + b) = cos a cos b − sin a sin b，
移动 k 个位置就是把每一对 (sin, cos) 旋转角度 k·ω<sub>i</sub>：PE(pos + k) = M<sub>k</sub> PE(pos)，
对所有位置都是同一个旋转 M<sub>k</sub>（“平移 k”标签页验证了这一点）。论文<i>推测</i>这能让模型学会按<i>相对</i>位置分配注意力。
两个编码的点积 PE(p)·PE(q) 只取决于 p − q（相似度标签页）。</p>
<p><b>可学习</b>的位置编码（每个位置一个向量）在论文中效果几乎一样（表 3 第 E 行）；论文选择正弦编码，是因为它可能让模型<b>外推</b>到
比训练中见过的更长的序列。<b>RoPE</b> 则旋转查询和键，使位置只通过偏移 n − m 进入 q·k（q 和 k 的内容仍然起作用）。</p>""",
    },
    "model": {
        "en": """<p>The architecture in the paper's notation. <b>N</b> layers on each side; <b>d<sub>model</sub></b> is the
width of every vector flowing through the model; <b>h</b> heads each work in d<sub>k</sub> = d<sub>model</sub>/h
dimensions; <b>d<sub>ff</sub></b> is the width inside the feed-forward network. Around every sublayer (attention
or feed-forward) sit a <b>residual connection</b> — its output is added to its input, so information and gradients
can pass straight through — and a <b>LayerNorm</b>. <b>Post-LN</b> (the paper) normalises after the addition,
LN(x + f(x)); <b>Pre-LN</b> normalises the sublayer's input, x + f(LN(x)), with one more norm at the end, which
leaves the residual path untouched and usually trains more stably.</p>
<p>The table shows where the parameters are. In small models with small vocabularies most sit in the
feed-forward networks and attention projections; with a large vocabulary the embeddings take the largest share
(the paper's base model with three separate 37,000-token tables: 56%). So when source and target share one
vocabulary, the paper uses one weight matrix for both embeddings and the output layer (§3.4), as the paper
presets here do.</p>
<p><b>Real models.</b> <i>File → Open model folder…</i> (or a folder dropped on the window) opens a model
downloaded from the Hugging Face Hub, e.g. <code>huggingface-cli download Helsinki-NLP/opus-mt-en-zh --local-dir
opus-mt-en-zh</code>: a Marian translator (opus-mt-…, the paper's base architecture), GPT-2 or BERT. This panel
then names where it came from; every other panel looks inside it as inside a model trained here, and Start in
the Training panel fine-tunes it from its own weights, with its own tokenizer, on the task or the file chosen
there.</p>""",
        "zh": """<p>用论文记号表示的架构。两侧各 <b>N</b> 层；<b>d<sub>model</sub></b> 是模型中流动的每个向量的宽度；<b>h</b> 个注意力头各在
d<sub>k</sub> = d<sub>model</sub>/h 维中工作；<b>d<sub>ff</sub></b> 是前馈网络内部的宽度。每个子层（注意力或前馈网络）外面都有一个
<b>残差连接</b>——把子层的输出加到它的输入上，让信息和梯度可以直接通过——以及一个 <b>LayerNorm</b>。<b>Post-LN</b>（论文的做法）
在相加之后归一化：LN(x + f(x))；<b>Pre-LN</b> 先归一化子层的输入：x + f(LN(x))，最后再加一个归一化，残差通路不受干扰，通常训练更稳定。</p>
<p>表格显示参数量分布在哪里。词表小的小模型里，大多数参数在前馈网络和注意力投影中；词表大时，嵌入占最大份额
（论文的 base 模型若用三张各 37,000 词元的独立表：56%）。因此当原文和译文共用一个词表时，论文让两个嵌入层和输出层共用同一个权重矩阵
（§3.4），这里的论文预设也是这样做的。</p>
<p><b>真实模型</b>。<i>文件 → 打开模型文件夹…</i>（或把文件夹拖到窗口上）可以打开从 Hugging Face Hub 下载的模型，例如
<code>huggingface-cli download Helsinki-NLP/opus-mt-en-zh --local-dir opus-mt-en-zh</code>：Marian 翻译模型（opus-mt-…，
即论文的 base 架构）、GPT-2 或 BERT。这个面板会写明它的来源；其他各个面板都能像查看在这里训练的模型一样查看它的内部；
在“训练”面板按“开始”，就从它自己的权重出发、用它自带的分词器，在那里选定的任务或文件上对它进行微调。</p>""",
    },
    "map": {
        "en": """<p>The paper's Figure 1, drawn for the model that is open now: the <b>encoder</b> stack on the left
reads the source sentence, the <b>decoder</b> stack on the right writes the translation one token at a time. Each
stack is N identical layers; each layer is built from <b>sublayers</b> (multi-head attention, the position-wise
feed-forward network), each wrapped in a residual connection and a layer normalisation (<b>Add &amp; Norm</b>).
The arrow from the encoder's output goes into every decoder layer's <b>cross-attention</b>: that is where the
translation looks at the source.</p>"""
        + MAP_USE["en"],
        "zh": """<p>论文的图 1，按当前打开的模型画出：左边的<b>编码器</b>堆栈读入原文，右边的<b>解码器</b>堆栈一次一个词元地写出译文。
每个堆栈由 N 个相同的层组成；每层由若干<b>子层</b>（多头注意力、逐位置前馈网络）构成，每个子层都包在残差连接和层归一化之中
（<b>相加与归一化</b>）。从编码器输出引出的箭头进入每个解码器层的<b>交叉注意力</b>：译文正是在这里查看原文。</p>"""
        + MAP_USE["zh"],
    },
    "data": {
        "en": """<p>The model never sees letters or characters directly: a <b>tokenizer</b> cuts each sentence into
<b>tokens</b> from a fixed vocabulary, and each token becomes a number. The chips show exactly what the model
reads. The char, word and wordpiece tokenizers split Chinese into single characters; bpe and byte_bpe learn
longer pieces from the data (such as 昨天 or 图书馆), and byte_bpe may cut a rare character into bytes. A red
chip is a piece the vocabulary does not know (&lt;unk&gt;): the model cannot see what it was.</p>
<p><b>Shortcut learning.</b> A model learns whatever pattern in its data predicts the answer, which is not always
the rule we meant. In an earlier version of the teaching grammar every past-tense sentence had a time word such as
“yesterday”, and the bundled model of that time learned to write 了 from 昨天 rather than from the past-tense
verb: “Li Hua bought an interesting book.” became 李华买一本有意思的书。 and “Did Anna read a novel in the
library?” became 安娜在图书馆看一本小说吗？ — both without 了 (李华买了一本有意思的书。 安娜在图书馆看了一本小说吗？)
— while every sentence with a time word came out right. The data allowed the shortcut; only data that breaks it
(past-tense sentences without a time word) can teach the real rule.</p>""",
        "zh": """<p>模型从不直接看到字母或汉字：<b>分词器</b>把每个句子切成来自固定词表的<b>词元</b>，每个词元变成一个数字。
这些小方块正是模型读到的内容。char、word 和 wordpiece 分词器把中文切成单个汉字；bpe 和 byte_bpe 从数据中学出更长的片段
（如“昨天”“图书馆”），byte_bpe 还可能把罕见的汉字切成字节。红色方块是词表里没有的片段（&lt;unk&gt;）：模型看不到它原来是什么。</p>
<p><b>捷径学习</b>。模型学到的是数据中能预测答案的规律，而不一定是我们想教的规则。在教学语法的早期版本中，每个过去时的句子都带有
“昨天”之类的时间词，当时内置的模型就学会了根据“昨天”而不是根据过去时的动词来写“了”：它把 “Li Hua bought an interesting
book.” 译成“李华买一本有意思的书。”，把 “Did Anna read a novel in the library?” 译成“安娜在图书馆看一本小说吗？”——
两句都漏了“了”（应为“李华买了一本有意思的书。”和“安娜在图书馆看了一本小说吗？”），而每个带时间词的句子都译对了。
是数据允许了这条捷径；只有打破它的数据（不带时间词的过去时句子）才能教会真正的规则。</p>""",
    },
}


# How each family changes the paper's model, and what a Mixture-of-Experts router does: topics the attention panel
# opens from its buttons (the family's in the Layer and Head row, the router's on the Router tab), not panels.
TOPIC_HELP: dict[str, dict[str, str]] = {
    "family_encoder_decoder": {
        "en": """<p><b>Encoder–decoder</b>: the paper's Transformer, and T5's. The <b>encoder</b> reads the whole
source at once; its self-attention has no mask, so every source token sees the whole sentence, both ways. The
<b>decoder</b> writes the target one token at a time: its self-attention is <b>causal</b> (a position sees itself and
the positions before it, never later ones) and its <b>cross-attention</b> reads the encoder's output. So there are
three kinds of attention to look at. In training every target position predicts its next token at once (teacher
forcing); the causal mask keeps each from seeing the token it must predict.</p>
<p><b>T5</b> (Raffel et al., 2020) keeps this shape and changes how positions enter. Nothing is added to the
embeddings; instead every self-attention adds a learned <b>relative position bias</b> to its scores q·k/√d<sub>k</sub>:
one number per head for each <i>bucket</i> of the offset key − query. Small offsets each have a bucket of their own,
larger ones share buckets whose width grows logarithmically (T5: 32 buckets, max_distance 128; the last bucket takes
every distance from 91 on in the encoder, from 113 on in the decoder). The encoder's buckets tell keys before the
query from keys after it (8 exact offsets before the query, 0 included, and 7 after); the decoder's only look back
(16 exact offsets); the table is shared by all layers of a stack, and cross-attention gets none. The positional lab
shows the buckets. T5 itself also normalises before each sublayer (Pre-LN) with an RMS norm, computes q·k without
dividing by √d<sub>k</sub> (the factor is folded into the initialisation of W<sup>Q</sup>) and does not scale its
embeddings; this app scales as the paper does. T5 was pre-trained by filling in dropped spans of text.</p>""",
        "zh": """<p><b>编码器–解码器</b>：论文的 Transformer，也是 T5 的结构。<b>编码器</b>一次读入整个原文；它的自注意力不带掩码，所以每个原文词元都能看到整句话，前后两个方向都能看。<b>解码器</b>一次写出一个词元：它的自注意力是<b>因果</b>的（一个位置只看它自己和它之前的位置，从不看后面的位置），它的<b>交叉注意力</b>读取编码器的输出。因此这里有三种注意力可看。训练时译文的每个位置同时预测它的下一个词元（教师强制）；因果掩码保证每个位置都看不到它要预测的词元。</p>
<p><b>T5</b>（Raffel 等，2020）保留这个结构，改变的是位置信息进入模型的方式。嵌入上不加任何东西；每个自注意力在得分 q·k/√d<sub>k</sub>上加一个学到的<b>相对位置偏置</b>：按偏移 键 − 查询 所在的<i>桶</i>，每个头一个数。小的偏移各有自己的桶，较大的偏移共用桶，桶宽按对数增长（T5：32 个桶，max_distance 128；编码器中最后一个桶包含 91 及更远的所有距离，解码器中从 113 开始）。编码器的桶区分查询之前和之后的键（查询之前 8 个精确的偏移，含 0，之后 7 个）；解码器的桶只看之前的键（16 个精确的偏移）；一个堆栈的所有层共用同一张表，交叉注意力没有偏置。位置编码实验室显示这些桶。T5 本身还在每个子层之前用 RMS 归一化（Pre-LN），计算 q·k 时不除以 √d<sub>k</sub>（这个因子并入了 W<sup>Q</sup> 的初始化），也不缩放嵌入；本程序的缩放与论文相同。T5 通过补全文本中被删去的若干段文字进行预训练。</p>""",
    },
    "family_decoder_only": {
        "en": """<p><b>Decoder-only</b>: GPT (Radford et al., 2018). One stack instead of two: the paper's decoder
without its cross-attention, because there is no encoder to read. It reads one stream of text (here &lt;bos&gt;, the
prompt and what it has written so far) and at every position <b>predicts the next token</b>. It learns from plain
text: the input is the text, the target the same text shifted by one, so every position learns at once. GPT learns
one vector per position.</p>
<p>Its only attention is <b>self-attention (causal)</b>: the upper triangle of the map is hatched because a position
may not look at later positions. Why not? The token a position must predict is the next one, and in training it is
right there in the input, one place to the right. A position that could see it would learn to copy it instead of
predicting it; and when the model writes, the later tokens do not exist yet. The rows read “read → predicts”: the
token at that position, and the one it should give next.</p>""",
        "zh": """<p><b>仅解码器</b>：GPT（Radford 等，2018）。只有一个堆栈而不是两个：论文的解码器去掉交叉注意力，因为没有编码器可读。它读入一条文本（这里是 &lt;bos&gt;、提示词和它已经写出的部分），在每个位置<b>预测下一个词元</b>。它从纯文本中学习：输入是文本，要预测的是同一段文本向后错开一位，因此所有位置同时学习。GPT 为每个位置学习一个向量。</p>
<p>它唯一的注意力是<b>自注意力（带因果掩码）</b>：图的右上三角带斜线，因为一个位置不能看后面的位置。为什么不能？一个位置要预测的是下一个词元，而训练时这个词元就在输入里，紧挨在它右边。能看到它的位置会学着照抄，而不是去预测；而且模型写作时，后面的词元还不存在。每一行标为“读入 → 预测”：这个位置上的词元，以及它接下来应给出的词元。</p>""",
    },
    "family_encoder_only": {
        "en": """<p><b>Encoder-only</b>: BERT (Devlin et al., 2019). One stack: the paper's encoder, with no decoder
and no cross-attention. Its only attention is <b>self-attention (both ways)</b>: no mask, every token sees the whole
sentence, left and right.</p>
<p>It learns by <b>masked language modelling</b>: 15% of the tokens are chosen; of those, 80% are replaced by
&lt;mask&gt;, 10% by a random token and 10% stay as they are, and the model must say what was there. Only the chosen
positions are scored. That is why it may look both ways: the answer is not in its input (it was hidden, or the model
cannot tell which tokens were swapped), so seeing both sides is no cheating. GPT predicts the next token at every
position, and that token is always in its input further right, so GPT must not look there. The random and
unchanged 10% keep BERT from learning that only &lt;mask&gt; positions matter: &lt;mask&gt; never appears in the text
it is later used on.</p>
<p>BERT's input starts with <b>&lt;cls&gt;</b> (here &lt;bos&gt; plays it, and &lt;eos&gt; plays &lt;sep&gt;); two
sentences A and B are told apart by segment embeddings. A small head on the &lt;cls&gt; position learns
<b>next-sentence prediction</b> (NSP): does B follow A in the text, or was it drawn at random (half the pairs
each)? It fills no masks; it makes the &lt;cls&gt; state a summary of the pair, which classifiers use later.</p>""",
        "zh": """<p><b>仅编码器</b>：BERT（Devlin 等，2019）。只有一个堆栈：论文的编码器，没有解码器，也没有交叉注意力。它唯一的注意力是<b>自注意力（双向）</b>：不带掩码，每个词元都能看到整句话，左边和右边都能看。</p>
<p>它通过<b>掩码语言模型</b>学习：选出 15% 的词元；其中 80% 换成 &lt;mask&gt;，10% 换成随机词元，10% 保持不变，模型要说出原来是什么。只有被选中的位置计入损失。这正是它可以双向看的原因：答案不在它的输入里（要么被藏起来了，要么模型分不清哪些词元被换过），所以看两边不算作弊。GPT 在每个位置都预测下一个词元，而这个词元总在它输入的右边，所以 GPT 不能往那边看。随机替换和保持不变的那 10% 让 BERT 不会只在意 &lt;mask&gt; 位置：以后实际使用它的文本里从不出现 &lt;mask&gt;。</p>
<p>BERT 的输入以 <b>&lt;cls&gt;</b> 开头（这里由 &lt;bos&gt; 充当，&lt;eos&gt; 充当 &lt;sep&gt;）；两个句子 A 和 B 用片段嵌入区分。&lt;cls&gt; 位置上的一个小输出头学习<b>下一句预测</b>（NSP）：B 在文本中是否紧跟在 A 后面，还是随机抽来的（各占一半）？它不填掩码；它让 &lt;cls&gt; 的状态成为这对句子的概括，供以后的分类器使用。</p>""",
    },
    "router": {
        "en": """<p>A <b>Mixture-of-Experts</b> layer replaces a layer's feed-forward network with N of them, the
<b>experts</b>, and a <b>router</b>. The router is one linear map from a token's vector to N scores, then a softmax:
each token gets a probability for each expert (a row of the map; it sums to 1). The token goes to the <b>k</b> most
probable experts (outlined), and the layer's output is their outputs weighted by their probabilities. With
<b>k = 1</b> the weight is the chosen expert's own probability (Switch Transformer): a router that is surer of its
choice passes more of that expert's output on, which is how the task itself teaches the router (a weight of 1
would not depend on the router at all). With <b>k ≥ 2</b> the k probabilities are <b>renormalised</b> to sum to 1
(GShard, Mixtral). Each token uses the weights of k experts, not N: the model holds N times the feed-forward
parameters for about k times the work per token.</p>
<p>Left alone, a router tends to favour the experts that happened to start out best: they get more tokens, learn
more and are chosen more, while the others get few tokens to learn from. Training therefore adds a
<b>load-balancing loss</b> (Switch Transformer): N · Σ<sub>i</sub> f<sub>i</sub> · P<sub>i</sub>, where
f<sub>i</sub> is the share of the token assignments that went to expert i and P<sub>i</sub> the mean router
probability of expert i over the batch. It is 1 when the tokens (or the probabilities) are spread evenly and grows
when tokens and probability pile on the same experts; the Training panel plots its mean over the MoE layers, so 1 there means balanced
too. The loads under the map count this one input; the balance is asked for over whole batches.</p>
<p>Here <b>no token is dropped</b>: an expert takes every token sent to it, however many, so a token's output never
depends on which other tokens share its batch. (Large systems give each expert a capacity and let the tokens beyond
it skip the layer.)</p>""",
        "zh": """<p><b>混合专家</b>（Mixture-of-Experts）层把一层的前馈网络换成 N 个前馈网络，即<b>专家</b>，再加一个<b>路由器</b>。路由器是从词元向量到 N 个得分的一个线性映射，再接 softmax：每个词元对每个专家得到一个概率（图中的一行，总和为 1）。词元被送往概率最高的 <b>k</b> 个专家（带框的格子），这一层的输出是这些专家输出按概率的加权和。<b>k = 1</b> 时权重就是被选中专家自己的概率（Switch Transformer）：路由器对选择越有把握，那个专家的输出就传得越多，任务本身正是这样教会路由器的（权重若恒为 1，就与路由器毫无关系）。<b>k ≥ 2</b> 时把那 k 个概率<b>重新归一化</b>到总和为 1（GShard、Mixtral）。每个词元只用 k 个专家的权重，而不是 N 个：模型拥有 N 倍的前馈参数，每个词元的计算量却只约为 k 倍。</p>
<p>放任不管的话，路由器往往偏爱一开始碰巧最好的几个专家：它们分到更多词元、学得更多、于是更常被选中，其余专家则只分到很少的词元可学。因此训练时加上<b>负载均衡损失</b>（Switch Transformer）：N · Σ<sub>i</sub> f<sub>i</sub> · P<sub>i</sub>，其中 f<sub>i</sub> 是分给专家 i 的词元份额，P<sub>i</sub> 是这一批中专家 i 的平均路由概率。词元（或概率）分布均匀时它等于 1，词元和概率都集中到同一些专家上时它变大；训练面板画的是它在各 MoE 层上的平均，所以那里的 1 同样表示均衡。图下方的负载只统计这一条输入；均衡是对整批数据要求的。</p>
<p>这里<b>不丢弃任何词元</b>：一个专家接收送来的所有词元，不论多少，所以一个词元的输出从不取决于同一批里还有哪些别的词元。（大型系统给每个专家设定容量，超出容量的词元直接跳过这一层。）</p>""",
    },
}
# the Decoding panel's explanation for a decoder-only model (its prompt, greedy, sampling, beam)
TOPIC_HELP["generation"] = {
    "en": """<p>A decoder-only model (GPT) does not translate: it <b>continues the prompt</b>, one token at a
time. At every step it reads &lt;bos&gt;, the prompt and what it has written so far, and gives a probability to
every possible next token; the bars show the ten most likely.</p>
<p><b>Greedy</b> always takes the most likely token, so the same prompt always gives the same text (and often a
repetitive one). <b>Sample</b> draws the token at random, each with a chance equal to its probability:
<b>temperature</b> T divides the scores before the softmax — below 1 the likely tokens get likelier, above 1 the
distribution flattens; <b>top-k</b> keeps only the k most likely tokens, <b>top-p</b> (nucleus sampling) only
the smallest set of most likely tokens whose probabilities add up to p. The grey bars are the tokens these cuts
removed: they could not be drawn; the outlined bar is the one that was. The same <b>seed</b> draws the same
text again. <b>Beam</b> search keeps the k most probable continuations, as for translation.</p>""",
    "zh": """<p>仅解码器模型（GPT）不做翻译：它<b>接着提示词往下写</b>，一次一个词元。每一步它读入 &lt;bos&gt;、提示词和已经写出的内容，
给每个可能的下一个词元一个概率；条形图显示概率最高的十个。</p>
<p><b>贪心</b>总是取最可能的词元，所以同一个提示词总是得到同一段文字（而且常常重复）。<b>采样</b>按概率随机抽取词元：
<b>温度</b>：在 softmax 之前把得分除以温度 T——小于 1 时可能的词元更可能，大于 1 时分布变平；<b>top-k</b> 只保留最可能的 k 个词元，
<b>top-p</b>（核采样）只保留概率之和达到 p 的最小的一组最可能词元。灰色的条是被这些截断去掉的词元，不可能被抽到；带框的条是抽中的那个。
同一个<b>种子</b>会再次抽出同一段文字。<b>束搜索</b>与翻译时一样，保留概率最高的 k 个续写。</p>""",
}
# the Why panel (explorer/panels/interpret.py): attribution and the logit lens
HELP["why"] = {
    "en": """<p>Why did the model say that? This panel follows the Decoding panel: the sentence and the output up to
the current step. <b>Attribution</b> gives every cell a number: how much that input token (a source word, or an
output token read before) pushed the row's output token up (red) or down (blue). <b>Integrated gradients</b>
walks from a blank input (all embeddings zero) to the real one and adds up the gradients on the way: a row sums
to log P(token) − log P(token | blank). <b>Gradient × input</b> is the first step of that walk alone: quick, but
only local. <b>Attention rollout</b> multiplies the attention of all layers together: where information could
flow, not what it did. Attention is not explanation: compare them.</p>
<p><b>Rather than</b>: click a candidate's bar in the Decoding panel (or choose it here) and the last row explains
log P(the chosen token) − log P(that one): what made the model prefer its token to the other (Yin &amp; Neubig
2022). With “Show on the source words” the Decoding panel's chips take the colours of the current step's row.</p>
<p>The <b>logit lens</b> (nostalgebraist 2020) reads the residual stream after each layer through the final norm
and the output layer: what the model would say if it stopped there. The final answer's cells are orange; ★ marks
the layer from which it stays on top. The last layer is the model's own distribution.</p>""",
    "zh": """<p>模型为什么这样说？这个面板跟随“解码”面板：当前的句子，以及到当前这一步为止的输出。<b>归因</b>给每个格子一个数：
那个输入词元（原文中的词，或之前已读入的输出词元）把这一行的输出词元推高（红色）或压低（蓝色）了多少。<b>积分梯度</b>从空白输入
（所有嵌入为零）一路走到真实输入，把沿途的梯度加起来：一行之和等于 log P(词元) − log P(词元 | 空白输入)。<b>梯度 × 输入</b>
只走这条路的第一步：快，但只反映局部。<b>注意力展开</b>把所有层的注意力相乘：信息可能从哪里流过来，而不是它实际起了什么作用。
注意力不等于解释：把它们对照着看。</p>
<p><b>而不是</b>：在“解码”面板里点击一个候选词的条（或在这里选择），最后一行就解释 log P(选中的词元) − log P(那个词元)：
是什么让模型选了它的词元而不是另一个（Yin 和 Neubig，2022）。勾选“在原文词上显示”时，“解码”面板的小方块会染上当前这一步那一行的颜色。</p>
<p><b>逻辑透镜</b>（nostalgebraist，2020）把每一层之后的残差流经过最终归一化和输出层读出来：模型如果在那一层就停下，会说什么。
最终答案所在的格子是橙色的；★ 标出从哪一层起它一直排第一。最后一层就是模型自己的分布。</p>""",
}
# the Lanes panel (explorer/panels/lanes.py): several ways of decoding side by side
HELP["lanes"] = {
    "en": """<p>The Decoding panel's sentence decoded several ways at once, one row each: <b>greedy</b> (always the
most probable token), <b>beam search</b> (the k best prefixes kept; its row shows the best) and <b>sampling</b>
(each token drawn at random at the chosen temperature, one row per seed). <b>Step</b> moves every lane one token;
a lane that has finished stays at its end (✓). <b>log P</b> is the model's own log-probability of the row's output
(at temperature 1), so the lanes compare: beam search finds outputs greedy misses, sampling wanders. From the
token where a lane first differs from the greedy one, its tokens are orange.</p>
<p>Under the lanes, the <b>beam lane's tree</b> at the same step, as the Decoding panel draws it: blue the prefixes
kept, grey the continuations pruned, green the finished hypotheses (★ their length-normalised score), orange the
best path.</p>""",
    "zh": """<p>把“解码”面板里的句子同时用几种方式解码，每种一行：<b>贪心</b>（总是取最可能的词元）、<b>束搜索</b>（保留 k 个最好的前缀；
这一行显示最好的那个）和<b>采样</b>（按所选温度随机抽取每个词元，每个种子一行）。<b>下一步</b>让每一路都前进一个词元；已经结束的路停在终点（✓）。
<b>log P</b> 是模型自己对这一行输出给出的对数概率（温度为 1），所以各路可以比较：束搜索能找到贪心错过的输出，采样则会走偏。
从某一路第一次和贪心那一路不同的词元起，它的词元显示为橙色。</p>
<p>各路下面是束搜索那一路在同一步的<b>束搜索树</b>，画法和“解码”面板一样：蓝色是保留的前缀，灰色是被剪掉的续写，绿色是已结束的假设（★ 为长度归一化得分），橙色是最佳路径。</p>""",
}
# the Experiment panel (explorer/panels/experiment.py): a part taken out, trained beside the intact model
HELP["experiment"] = {
    "en": """<p>Take one part of the Transformer out (or change it), train the broken model <b>beside an intact
one</b>, and compare. Choose an experiment and press <b>Run beside its baseline</b> (or pick it from the
<b>Experiments</b> menu): both runs start from the same seed and the same initial weights, and train in turns on the
same batches in the same order, so the change is the only difference. Read the prediction first: it says what should
happen and why. As they train, their curves overlay in the Training panel (two runs), and here, at the same step:
the experiment's figure for each, the probe sentence's attention in each (the same layer and head; "all, averaged"
compares runs with different numbers of heads) and what each makes of the same held-out sentences (✓: the
reference). <b>Look inside</b> shows either run in every other panel; both keep training.</p>""",
    "zh": """<p>把 Transformer 的一个部件拿掉（或改掉），让这个“坏了的”模型和一个<b>完好的模型并排</b>训练，然后比较。
选一个实验，点击<b>与基线并排运行</b>（或在<b>实验</b>菜单里选它）：两次运行从同一个随机种子、同样的初始权重出发，
轮流在同样顺序的同样批次上训练，所以唯一的不同就是那个改动。先读预测：它说明会发生什么以及为什么。训练时，两条曲线在“训练”面板里叠在一起（两次运行），
这里则在同一步显示：每次运行的实验指标、探针句子在每个模型里的注意力（同一层同一个头；“全部，取平均”可以比较头数不同的模型），
以及它们对同样的留出句子各输出了什么（✓：与参考一致）。<b>查看内部</b>让其他面板显示任一次运行；两次运行都继续训练。</p>""",
}
HELP.update(TOPIC_HELP)
HELP.update(FAMILY_HELP)
HELP.update(ABLATION_HELP)
# a line break of the source between two Chinese characters (or full-width marks) would show as a space
WIDE = "[\u3000-\u303f\u3400-\u9fff\uff00-\uffef“”‘’—…]"
CHINESE_BREAK = re.compile(f"({WIDE}(?:</?\\w+>)*)\n((?:</?\\w+>)*{WIDE})")  # tags such as <b> may stand between


def help_text(key: str) -> str:
    """The explanation ``key`` in the interface language; "training+training_moe": the topics one after another
    (:func:`explorer.help_families.family_topic`)."""
    text = "".join(HELP[k].get(language.code, HELP[k]["en"]) for k in key.split("+"))
    return CHINESE_BREAK.sub(r"\1\2", text) if language.code == "zh" else text


SHEET_SHADOW = 12  # px of soft shadow drawn left of the sheet's border
SHEET_WIDTH = (320, 480)  # the sheet's least and greatest width, px; never wider than the panel


def info_pixmap(colour: QColor, side: int) -> QPixmap:
    """A circled “i” drawn from shapes (a ring, a dot and a bar): no font needs the ⓘ glyph."""
    pixmap = QPixmap(side, side)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    ring = max(1.0, side / 12)
    painter.setPen(QPen(colour, ring))
    painter.drawEllipse(QRectF(ring / 2, ring / 2, side - ring, side - ring))
    stem = max(1.5, side * 0.13)  # width of the i's bar; the dot is a little wider
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(colour)
    painter.drawEllipse(QPointF(side / 2, side * 0.29), stem * 0.62, stem * 0.62)
    painter.drawRoundedRect(QRectF((side - stem) / 2, side * 0.42, stem, side * 0.36), stem / 3, stem / 3)
    painter.end()
    return pixmap


def info_icon(palette: QPalette) -> QIcon:
    """The ⓘ icon in ``palette``'s text colour, at the sizes buttons and titles ask for."""
    icon = QIcon()
    colour = palette.color(QPalette.ColorRole.WindowText)
    for side in (12, 14, 16, 20, 24, 32, 48, 64):
        icon.addPixmap(info_pixmap(colour, side))
    return icon


class HelpSheet(QFrame):
    """The explanation as a side sheet over the right part of a panel: a title, a close button, a scrolling body.

    It is a child of the panel's holder but in no layout, so opening it moves nothing underneath.
    """

    closed = Signal()  # the close button or Esc

    def __init__(self, key: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(f"{key}_help_sheet")
        self.icon = QLabel()
        self.title = QLabel()
        self.title.setObjectName(f"{key}_help_title")
        font = self.title.font()
        font.setBold(True)
        self.title.setFont(font)
        self.close_button = QToolButton()
        self.close_button.setObjectName(f"{key}_help_close")
        self.close_button.setAutoRaise(True)
        self.close_button.setIcon(self.style().standardIcon(QStyle.StandardPixmap.SP_TitleBarCloseButton))
        self.close_button.clicked.connect(self.closed)
        self.text = QLabel()
        self.text.setObjectName(f"{key}_help_text")
        self.text.setWordWrap(True)
        self.text.setTextFormat(Qt.TextFormat.RichText)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.text.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.body = QScrollArea()
        self.body.setWidgetResizable(True)
        self.body.setFrameShape(QFrame.Shape.NoFrame)
        self.body.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.body.setWidget(self.text)
        self.text.setAutoFillBackground(False)  # setWidget turned it on; the sheet paints the body
        self.body.viewport().setAutoFillBackground(False)
        self.text.setMinimumWidth(1)  # wrap to the sheet's width, however narrow, never wider
        escape = QShortcut(QKeySequence(Qt.Key.Key_Escape), self)
        escape.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        escape.activated.connect(self.closed)
        self._lay_out()

    def _lay_out(self) -> None:
        header = QHBoxLayout()
        header.setSpacing(6)
        header.addWidget(self.icon)
        header.addWidget(self.title, 1)
        header.addWidget(self.close_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(SHEET_SHADOW + 10, 6, 4, 6)
        layout.addLayout(header)
        layout.addWidget(self.body, 1)

    def retranslate(self, title: str, body: str) -> None:
        self.title.setText(title)
        self.text.setText(body)
        self.close_button.setToolTip(tr("Close (Esc)"))

    def set_icon(self, icon: QIcon) -> None:
        side = self.title.fontMetrics().height()
        self.icon.setPixmap(icon.pixmap(QSize(side, side), self.devicePixelRatioF()))

    def place(self, area: QRect) -> None:
        """Over the right part of ``area`` (the holder's rectangle), its full height."""
        least, most = SHEET_WIDTH
        width = min(area.width(), max(least, min(most, area.width() * 2 // 5)))
        self.setGeometry(area.right() - width + 1, area.top(), width, area.height())

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802
        painter = QPainter(self)
        shadow = QLinearGradient(0, 0, SHEET_SHADOW, 0)
        shadow.setColorAt(0.0, QColor(0, 0, 0, 0))
        shadow.setColorAt(1.0, QColor(0, 0, 0, 90))
        painter.fillRect(QRect(0, 0, SHEET_SHADOW, self.height()), shadow)
        body = self.rect().adjusted(SHEET_SHADOW, 0, 0, 0)
        painter.fillRect(body, self.palette().color(QPalette.ColorRole.Base))
        painter.setPen(self.palette().color(QPalette.ColorRole.Mid))
        painter.drawLine(body.topLeft(), body.bottomLeft())


class HelpBox(QWidget):
    """A “What am I looking at?” button that opens a short explanation over a panel.

    Attached to a panel's holder (:meth:`attach_to`), it takes no room: the button sits in the title bar of the
    dock that holds the panel (on the holder's top-right corner where there is no title bar), and the
    explanation opens as a :class:`HelpSheet` over the panel's right part.
    """

    def __init__(self, key: str, parent: QWidget | None = None, label: str = "") -> None:
        super().__init__(parent)
        self.key = key
        self._measured: tuple[int, int] | None = None  # see _widths
        self.label = label  # a topic's name (N_-marked) for the button and the sheet; "": “What am I looking at?”
        self.button = QToolButton()
        self.button.setObjectName(f"{key}_help_button")
        self.button.setCheckable(True)
        self.button.setAutoRaise(True)
        self.button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.button.toggled.connect(self._on_toggled)
        self.sheet = HelpSheet(key, self)
        self.sheet.hide()
        self.sheet.closed.connect(lambda: self.button.setChecked(False))
        self.text = self.sheet.text
        self._area: QWidget | None = None  # what the sheet covers
        self._holder: QWidget | None = None
        self._dock: QDockWidget | None = None
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.button)
        self._refresh_icon()
        self.retranslate()

    def attach_to(self, holder: QWidget) -> None:
        """Float over ``holder`` (the widget that holds the panel) instead of taking a row in its layout."""
        self._holder = holder
        self.setParent(holder)
        self._cover(holder)
        self._find_dock()
        self.show()

    def _cover(self, area: QWidget) -> None:
        if self._area is not None:
            self._area.removeEventFilter(self)
        self._area = area
        self.sheet.setParent(area)
        self.sheet.hide()
        area.installEventFilter(self)

    def _find_dock(self) -> None:
        """Move the button into the title bar of the dock that now holds the holder, if one does."""
        dock = self._holder.parentWidget() if self._holder is not None else None
        if not isinstance(dock, QDockWidget) or dock is self._dock:
            return
        self._dock = dock
        self.setParent(dock)
        self.show()
        dock.installEventFilter(self)
        dock.windowTitleChanged.connect(self.sheet.title.setText)
        self.sheet.title.setText(dock.windowTitle() or tr("What am I looking at?"))
        self._place()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        kind = event.type()
        if watched is self._holder and kind == QEvent.Type.ParentChange:
            self._find_dock()
        if kind in (QEvent.Type.Resize, QEvent.Type.Move, QEvent.Type.Show, QEvent.Type.LayoutRequest):
            self._place()
        return False

    def _title_bar(self) -> QRect | None:
        """The free part of the dock's title bar, between the title and the float/close buttons, in dock pixels."""
        if self._dock is None or self._holder is None or self._holder.parentWidget() is not self._dock:
            return None
        found = self._dock.findChildren(QAbstractButton, options=Qt.FindChildOption.FindDirectChildrenOnly)
        buttons = [b for b in found if b.objectName().startswith("qt_dockwidget_") and b.isVisibleTo(self._dock)]
        top = min((b.y() for b in buttons), default=0)
        height = self._holder.y() - top
        if height < 12:  # a floating dock in the window manager's frame: no title bar of its own
            return None
        right = min((b.x() for b in buttons), default=self._dock.width()) - 2
        return QRect(0, top, right, height)

    def _place(self) -> None:
        """The button in the title bar (or on the holder's corner); the open sheet over the holder's right part.
        A box in a panel's own layout (a topic's ⓘ) stays where the layout puts it; its open sheet follows."""
        if self._holder is None:
            if not self.sheet.isHidden() and self._area is not None:
                self.sheet.place(self._sheet_area(self._area))
            return
        title = self._title_bar()
        if title is not None:
            self._in_title_bar(title)
        elif self._dock is not None and self._dock.titleBarWidget() is not None:
            self.hide()  # whoever replaced the title bar (presenter mode) wants no chrome over the panel
        else:
            self._on_corner(self._holder)
        self.raise_()
        if not self.sheet.isHidden() and self._area is not None:  # open, even if the dock is not on screen
            self.sheet.place(self._sheet_area(self._area))

    def _in_title_bar(self, title: QRect) -> None:
        self.button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.button.setFixedHeight(title.height())
        self.button.setIconSize(QSize(title.height() - 4, title.height() - 4))
        width = self.sizeHint().width()
        self.setGeometry(title.right() - width + 1, title.top(), width, title.height())
        self.show()

    def _on_corner(self, holder: QWidget) -> None:
        """Just the icon, over the holder's top-right corner, where it hides the least of the panel."""
        self.button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonIconOnly)
        self.button.setMinimumHeight(0)
        self.button.setMaximumHeight(16777215)  # QWIDGETSIZE_MAX: the button's own height again
        self.button.setIconSize(QSize(16, 16))
        size = self.sizeHint()
        corner = holder.mapTo(self.parentWidget() or holder, QPoint(holder.width() - size.width(), 0))
        self.setGeometry(QRect(corner, size))
        self.setVisible(self.sheet.isHidden())  # the open sheet has its own close button there

    @staticmethod
    def _sheet_area(area: QWidget) -> QRect:
        """The part of ``area`` on screen: a holder squeezed below its minimum size overflows its dock."""
        seen = area.visibleRegion().boundingRect()
        return area.rect().intersected(seen) if not seen.isEmpty() else area.rect()

    def _on_toggled(self, on: bool) -> None:
        if not on:
            focus = QApplication.focusWidget()
            had_focus = focus is not None and self.sheet.isAncestorOf(focus)
            self.sheet.hide()
            self._place()
            if had_focus and self.isVisible():
                self.button.setFocus()
            return
        if self._area is None:  # not attached: cover whatever holds the button
            self._cover(self.parentWidget() or self)
        assert self._area is not None
        self.sheet.place(self._sheet_area(self._area))
        self.sheet.show()
        self.sheet.raise_()
        self._place()
        self.sheet.body.setFocus()  # so that Esc closes it and the arrow keys scroll it

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802
        if event.type() == QEvent.Type.PaletteChange:  # the theme changed: redraw the icon in its text colour
            self._refresh_icon()
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):
            self._measured = None  # presenter mode's larger type: measure again
        super().changeEvent(event)

    def _refresh_icon(self) -> None:
        icon = info_icon(self.palette())
        self.button.setIcon(icon)
        self.sheet.set_icon(icon)

    def set_topic(self, key: str, label: str) -> None:
        """Explain another topic of :data:`HELP` (the model's family changed), under the name ``label``."""
        if (key, label) == (self.key, self.label):
            return  # the same model family again: its long text is laid out already
        self.key, self.label = key, label
        self.retranslate()

    # A topic's box in a panel's row asks for room for its name but needs only its icon: where the row is
    # short of room (a 1024-px screen, two panels side by side) it shows the icon alone, its name as tooltip.
    def _in_row(self) -> bool:
        return bool(self.label) and self._holder is None

    def _widths(self) -> tuple[int, int]:
        """The button's width with its name and with its icon alone; measured once per name, font and style
        (measuring switches the button's style, which asks the layouts around it to run again: measured at
        every size hint, that kept them running)."""
        if self._measured is None:
            style = self.button.toolButtonStyle()
            widths = []
            for each in (Qt.ToolButtonStyle.ToolButtonTextBesideIcon, Qt.ToolButtonStyle.ToolButtonIconOnly):
                self.button.setToolButtonStyle(each)
                widths.append(self.button.sizeHint().width())
            self.button.setToolButtonStyle(style)
            self._measured = (widths[0], widths[1])
        return self._measured

    def sizeHint(self) -> QSize:  # noqa: N802
        hint = super().sizeHint()
        if self._in_row():
            hint.setWidth(self._widths()[0])
        return hint

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        hint = super().minimumSizeHint()
        if self._in_row():
            hint.setWidth(self._widths()[1])
        return hint

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802
        super().resizeEvent(event)
        if self._in_row():
            named = self.width() >= self._widths()[0]
            self.button.setToolButtonStyle(
                Qt.ToolButtonStyle.ToolButtonTextBesideIcon if named else Qt.ToolButtonStyle.ToolButtonIconOnly
            )

    def retranslate(self) -> None:
        name = tr(self.label) if self.label else tr("What am I looking at?")
        self._measured = None  # another name, another width
        self.button.setText(" " + name)  # a space between the icon and the words
        self.button.setToolTip(name)
        title = self._dock.windowTitle() if self._dock is not None else ""
        self.sheet.retranslate(title or name, help_text(self.key))
        if self._in_row():  # a longer or shorter name: the row lays the box out again
            self.setMinimumWidth(self._widths()[1])
            self.updateGeometry()
        self._place()
