"""“What am I looking at?” — a short explanation of each panel, for students, in both languages."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QToolButton, QVBoxLayout, QWidget

from explorer.i18n import language, tr

HELP: dict[str, dict[str, str]] = {
    "training": {
        "en": """<p>The model learns by <b>updates</b>: it reads a batch of sentence pairs, predicts every next target
token, measures how wrong it was (the <b>loss</b>, a cross-entropy), and nudges all its weights to be a little
less wrong. One update is one <b>step</b>.</p>
<p><b>Loss</b> should fall. With label smoothing (0.1) it cannot reach 0. The dashed <b>valid</b> curve is the
same loss on sentences the model never trains on: if it rises while the training loss falls, the model is
memorising. <b>Token accuracy</b>: how often the most likely next token is right. <b>Exact match</b> and
<b>BLEU</b> judge whole translations the model writes on its own. The <b>learning rate</b> follows the paper's
schedule: it rises during warm-up, then falls like 1/√step. The <b>gradient norm</b> is how hard the update
pushes; sudden spikes warn of trouble.</p>
<p>Try: train the same task twice with Post-LN and Pre-LN (or with and without label smoothing) and tick the
earlier run to compare the curves.</p>""",
        "zh": """<p>模型通过一次次<b>更新</b>来学习：读入一批句对，预测每个下一个目标词，衡量错得有多远（<b>损失</b>，即交叉熵），
再把所有权重朝“少错一点”的方向微调。一次更新就是一<b>步</b>。</p>
<p><b>损失</b>应当下降。使用标签平滑（0.1）时它不会降到 0。虚线 <b>valid</b> 是模型从未训练过的句子上的同一损失：如果它上升而训练损失下降，
说明模型在死记硬背。<b>词元准确率</b>：最可能的下一个词正确的比例。<b>完全匹配</b>和 <b>BLEU</b> 评价模型独立写出的整句译文。
<b>学习率</b>按论文的调度变化：预热阶段上升，之后按 1/√步数 下降。<b>梯度范数</b>表示这次更新推得有多猛，突然的尖峰往往预示问题。</p>
<p>试一试：用 Post-LN 和 Pre-LN（或有无标签平滑）各训练一次同一任务，勾选之前的运行来比较曲线。</p>""",
    },
    "decoding": {
        "en": """<p>A translation is written <b>one token at a time</b>. At every step the model reads the source and the
tokens it has written so far and gives a probability to every possible next token; the bars show the ten most
likely. <b>Greedy</b> decoding always takes the most likely one.</p>
<p><b>Beam search</b> keeps the <i>k</i> best partial translations instead of one. In the tree each node is a
token and its number is the <b>log-probability</b> of the whole prefix ending there (the sum of the logs of the
token probabilities — always negative; closer to 0 is more likely). Blue nodes were kept, grey ones pruned, green
ones finished. A finished hypothesis also shows its <b>score</b> ★ = log P / ((5 + length)/6)<sup>α</sup>:
without this length penalty, shorter sentences would always win, because every extra token lowers log P.</p>
<p>The heat strip shows where each head of a decoder layer looked in the source while choosing this token.</p>""",
        "zh": """<p>译文是<b>一次一个词元</b>写出来的。每一步，模型读入原文和已经写出的词元，给每个可能的下一个词元一个概率；条形图显示概率最高的十个。
<b>贪心</b>解码总是取最可能的那个。</p>
<p><b>束搜索</b>同时保留 <i>k</i> 个最好的部分译文。树中每个节点是一个词元，旁边的数字是以它结尾的整个前缀的<b>对数概率</b>
（各词元概率的对数之和，总是负数，越接近 0 越可能）。蓝色节点被保留，灰色被剪掉，绿色已结束。结束的假设还显示<b>得分</b>
★ = log P / ((5 + 长度)/6)<sup>α</sup>：没有这个长度惩罚，短句总会获胜，因为每多一个词元 log P 都会降低。</p>
<p>热力条显示在选择这个词元时，某一解码层的每个注意力头在原文中看向了哪里。</p>""",
    },
    "attention": {
        "en": """<p>Attention lets every position gather information from other positions. Each <b>row</b> belongs to
one position (the <b>query</b>); the colours along the row show how much it takes from each <b>key</b> position
(the columns). A row's weights are softmax(q·k/√d<sub>k</sub>) and always sum to 1.</p>
<p><b>Encoder self-attention</b>: source words looking at source words. <b>Cross-attention</b>: while writing the
translation, each target position looks at the source — for a good translation model it often forms a word
alignment, even across reordering. <b>Decoder self-attention</b> is <b>masked</b>: the upper triangle is empty
because a position may not look at tokens that come later — when the model translates, those tokens do not exist
yet, so in training it must not peek at them either.</p>
<p>Each layer has several <b>heads</b>, each with its own q, k, v projections, so different heads can look at
different things. The Q·K explainer works one row out with real numbers.</p>""",
        "zh": """<p>注意力让每个位置从其他位置汇集信息。每一<b>行</b>属于一个位置（<b>查询</b>），这一行上的颜色表示它从每个<b>键</b>位置
（各列）取了多少。一行的权重是 softmax(q·k/√d<sub>k</sub>)，总和恒为 1。</p>
<p><b>编码器自注意力</b>：原文词看原文词。<b>交叉注意力</b>：写译文时，每个目标位置看向原文——对于好的翻译模型，它常常形成词对齐，
即使语序发生了调换。<b>解码器自注意力</b>是<b>被遮盖的</b>：右上三角为空，因为一个位置不能看后面的词元——模型翻译时那些词元还不存在，
所以训练时也不许偷看。</p>
<p>每一层有多个<b>注意力头</b>，各有自己的 q、k、v 投影，因此不同的头可以关注不同的东西。Q·K 讲解器用真实数字把一行完整算一遍。</p>""",
    },
    "positional": {
        "en": """<p>Attention by itself ignores word order: shuffle the words and every position sees the same set.
So the paper adds a <b>positional encoding</b> to each word's embedding: a vector of sines and cosines of the
position at different frequencies, from fast (first dimensions) to very slow (last ones).</p>
<p>Why <b>sine and cosine</b> in pairs? For a fixed offset k, PE(pos + k) is the same rotation M<sub>k</sub> of
PE(pos) for every position — the “Shift by k” tab checks it. A linear layer can therefore learn to attend by
<i>relative</i> position. And the dot product of two encodings depends only on their distance (the similarity
tab).</p>
<p>A model can instead <b>learn</b> a vector per position, or use <b>RoPE</b>, which rotates queries and keys so
that q·k depends only on the offset.</p>""",
        "zh": """<p>注意力本身忽略词序：打乱词语，每个位置看到的仍是同一组词。因此论文给每个词的嵌入加上<b>位置编码</b>：
由位置的正弦和余弦组成的向量，频率从快（前面的维度）到非常慢（后面的维度）。</p>
<p>为什么要成对使用<b>正弦和余弦</b>？对固定的偏移 k，PE(pos + k) 对所有位置都是 PE(pos) 的同一个旋转 M<sub>k</sub>——
“平移 k”标签页验证了这一点。因此线性层可以学会按<i>相对</i>位置分配注意力。而且两个编码的点积只取决于它们的距离（相似度标签页）。</p>
<p>模型也可以为每个位置<b>学习</b>一个向量，或者使用 <b>RoPE</b>：旋转查询和键，使 q·k 只取决于偏移量。</p>""",
    },
    "model": {
        "en": """<p>The architecture in the paper's notation. <b>N</b> layers on each side; <b>d<sub>model</sub></b> is the
width of every vector flowing through the model; <b>h</b> heads each work in d<sub>k</sub> = d<sub>model</sub>/h
dimensions; <b>d<sub>ff</sub></b> is the width inside the feed-forward network. The table shows where the
parameters are: most sit in the feed-forward networks and the attention projections.</p>""",
        "zh": """<p>用论文记号表示的架构。两侧各 <b>N</b> 层；<b>d<sub>model</sub></b> 是模型中流动的每个向量的宽度；<b>h</b> 个注意力头各在
d<sub>k</sub> = d<sub>model</sub>/h 维中工作；<b>d<sub>ff</sub></b> 是前馈网络内部的宽度。表格显示参数分布在哪里：大多数在前馈网络和注意力投影中。</p>""",
    },
    "data": {
        "en": """<p>The model never sees letters or characters directly: a <b>tokenizer</b> cuts each sentence into
<b>tokens</b> from a fixed vocabulary, and each token becomes a number. The chips show exactly what the model
reads. Here Chinese is split into single characters. A red chip is a piece the vocabulary does not know
(&lt;unk&gt;): the model cannot see what it was.</p>""",
        "zh": """<p>模型从不直接看到字母或汉字：<b>分词器</b>把每个句子切成来自固定词表的<b>词元</b>，每个词元变成一个数字。
这些小方块正是模型读到的内容。这里中文被切成单个汉字。红色方块是词表里没有的片段（&lt;unk&gt;）：模型看不到它原来是什么。</p>""",
    },
}


def help_text(key: str) -> str:
    return HELP[key].get(language.code, HELP[key]["en"])


class HelpBox(QWidget):
    """A “What am I looking at?” button that opens a short explanation above a panel."""

    def __init__(self, key: str, parent=None):
        super().__init__(parent)
        self.key = key
        self.button = QToolButton(objectName=f"{key}_help_button")
        self.button.setCheckable(True)
        self.button.setAutoRaise(True)
        self.text = QLabel(objectName=f"{key}_help_text")
        self.text.setWordWrap(True)
        self.text.setTextFormat(Qt.RichText)
        self.text.setStyleSheet("padding: 6px; border: 1px solid palette(mid); border-radius: 4px;")
        self.text.hide()
        self.button.toggled.connect(self.text.setVisible)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addStretch(1)
        row.addWidget(self.button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 0, 4, 0)
        layout.setSpacing(2)
        layout.addLayout(row)
        layout.addWidget(self.text)
        self.retranslate()

    def retranslate(self) -> None:
        self.button.setText("ⓘ " + tr("What am I looking at?"))
        self.text.setText(help_text(self.key))
