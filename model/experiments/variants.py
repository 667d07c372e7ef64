"""The bundled experiments: each breaks (or changes) one part of the Transformer and says, before the run, what
should happen and why. A variant is trained beside its baseline (:mod:`model.experiments.paired`): the same task,
seed, batches and, where the shapes allow, initial weights; only the change differs.

Texts come in English and Chinese (``expect`` / ``expect_zh``): the window shows the person's language, the CLI
prints English.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Measure = Literal["exact_match", "loss", "train_loss", "entropy", "long_exact_match", "long_bleu", "causal_loss"]


@dataclass(frozen=True)
class Changes:
    """Settings one run of a pair gets on top of the preset's: ModelConfig fields and TrainConfig fields."""

    model: dict[str, Any] = field(default_factory=dict)
    train: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Variant:
    """One experiment: a change, the task that shows it, and the prediction stated before the run."""

    name: str  # as typed: --variant no_positional
    title: str
    title_zh: str
    task: str  # the task chosen so that the difference shows within a minute on two cores
    changed: Changes  # what the variant gets and the baseline does not
    measure: Measure  # the figure that shows the effect
    expect: str  # what to expect and why, said before the run
    expect_zh: str
    steps: int = 600  # updates of each run (the bench's and the CLI's default)
    both: Changes = Changes()  # what both runs get (e.g. the learning-rate schedule of a comparison)
    baseline: Changes = Changes()  # what only the baseline gets (when the baseline is not the preset's own)
    arch: str = "encoder_decoder"
    predicted: Literal["lower", "higher", "same"] = "lower"  # the variant's figure against the baseline's


MEASURES: dict[str, tuple[str, str]] = {  # measure → how it is said (en, zh)
    "exact_match": ("exact match on held-out sentences", "留出句子的完全匹配率"),
    "loss": ("loss on held-out sentences", "留出句子的损失"),
    "train_loss": ("training loss (last 20 steps)", "训练损失（最后 20 步）"),
    "entropy": ("mean attention entropy (bits)", "平均注意力熵（比特）"),
    "long_exact_match": ("exact match on sentences longer than any trained on", "比训练句子更长的句子的完全匹配率"),
    "long_bleu": ("BLEU on sentences longer than any trained on", "比训练句子更长的句子的 BLEU"),
    "causal_loss": ("loss when it may not look ahead (as when generating)", "不能看后文时的损失（生成时就是这样）"),
}

VARIANTS: tuple[Variant, ...] = (
    Variant(
        "no_positional",
        "No positional encoding",
        "没有位置编码",
        "reverse",
        Changes(model={"positional": "none"}),
        "exact_match",
        "Attention treats its input as a set: without positions the encoder cannot tell the first symbol from the "
        "last. Reversing depends on order only, so the variant stays near 0% exact match while the baseline learns.",
        "注意力把输入当作一个集合：没有位置信息，编码器分不清第一个符号和最后一个符号。"
        "反转完全取决于顺序，所以变体的完全匹配率一直接近 0%，而基线学会了。",
    ),
    Variant(
        "no_residual",
        "No residual connections",
        "没有残差连接",
        "copy",
        Changes(model={"residual": False}),
        "train_loss",
        "A residual connection lets each layer add to its input instead of replacing it, and gives the gradient a "
        "short path to every layer. Without them the signal must pass every sublayer and norm: the loss falls far "
        "more slowly.",
        "残差连接让每一层在输入上做加法而不是替换它，也给梯度一条通向每一层的捷径。"
        "没有残差，信号必须穿过每个子层和归一化：损失下降得慢得多。",
        predicted="higher",
    ),
    Variant(
        "no_scaling",
        "No √d_k scaling",
        "不除以 √d_k",
        "copy",
        Changes(model={"scaled_attention": False}),
        "entropy",
        "The dot product of two d_k-dimensional vectors grows like √d_k. Without dividing by it the scores are "
        "larger, the softmax saturates onto one position, and its gradient vanishes: attention entropy is lower "
        "from the start.",
        "两个 d_k 维向量的点积大约随 √d_k 增长。不除以它，分数就更大，softmax 饱和到一个位置上，"
        "梯度也随之消失：注意力熵从一开始就更低。",
    ),
    Variant(
        "one_head",
        "One head instead of h",
        "一个头而不是 h 个",
        "sort",
        Changes(model={"n_heads": 1}),
        "exact_match",
        "Several heads attend to several places at once, each in a smaller subspace; one head must average what it "
        "looks at. Sorting needs to compare many symbols: one head learns it more slowly.",
        "多个头可以同时关注多个位置，每个头在较小的子空间里；一个头只能把它看到的取平均。"
        "排序需要比较许多符号：一个头学得更慢。",
    ),
    Variant(
        "post_ln_no_warmup",
        "Post-LN without warm-up (against Pre-LN)",
        "没有预热的 Post-LN（对比 Pre-LN）",
        "reverse",
        Changes(model={"norm": "post"}),
        "exact_match",
        "Both have 6 + 6 layers and train at a large constant rate from the first step. Post-LN (the paper's) puts "
        "the norm after the residual sum, so early gradients near the output are large: without the paper's warm-up "
        "it trains badly or not at all. Pre-LN keeps an unnormalised residual path and trains. The instability grows "
        "with depth: on the tiny preset's 2 + 2 layers it does not show.",
        "两者都有 6 + 6 层，从第一步起都用较大的固定学习率。Post-LN（论文的做法）把归一化放在残差相加之后，"
        "训练初期靠近输出的梯度很大：没有论文里的预热，它训练得很差甚至学不会。"
        "Pre-LN 保留了未归一化的残差通路，能正常训练。这种不稳定随深度增加：在 tiny 预设的 2 + 2 层上看不出来。",
        steps=300,  # (6 + 6 layers: three times the work of an update of the tiny preset)
        both=Changes(
            model={"n_encoder_layers": 6, "n_decoder_layers": 6},
            train={"schedule": "constant", "warmup_steps": 0, "lr": 3e-3},
        ),
        baseline=Changes(model={"norm": "pre"}),
    ),
    Variant(
        "no_causal_mask",
        "No causal mask in a GPT",
        "GPT 没有因果掩码",
        "text-grammar-en",
        Changes(model={"causal": False}),
        "causal_loss",
        "The causal mask hides the words after the one being predicted. Without it the model reads the answer: its "
        "training loss falls to almost 0, but when it generates, the future is not there to read and its output "
        "is garbage (its loss without looking ahead is high).",
        "因果掩码遮住了要预测的词之后的词。没有它，模型直接读到了答案：训练损失几乎降到 0，"
        "可是生成时没有后文可读，输出的是乱码（不能看后文时它的损失很高）。",
        arch="decoder_only",
        predicted="higher",
    ),
    Variant(
        "no_label_smoothing",
        "No label smoothing",
        "没有标签平滑",
        "copy",
        Changes(train={"label_smoothing": 0.0}),
        "train_loss",
        "Label smoothing (ε = 0.1) asks for 90% on the right token and spreads the rest: the loss cannot fall below "
        "about ε·log V. Without it the loss falls toward 0 and the model grows over-confident.",
        "标签平滑（ε = 0.1）只要求正确的词得到 90% 的概率，其余分给别的词：损失降不到大约 ε·log V 以下。"
        "没有它，损失会趋向 0，模型变得过于自信。",
    ),
    Variant(
        "tied_embeddings",
        "Tied embeddings (against untied)",
        "共享嵌入（对比不共享）",
        "copy",
        Changes(model={"tie_embeddings": True}),
        "exact_match",
        "The paper shares one matrix between the embeddings and the output layer: a token's input vector is also "
        "the direction that predicts it, and a vocabulary × d_model matrix is saved. In translation that learns about "
        "as well. Here the task is to copy: the right output is the input token itself, which a tied model already "
        "points to, so it learns faster than the untied one.",
        "论文让嵌入层和输出层共用一个矩阵：一个词的输入向量同时也是预测它的方向，还省下一个 词表 × d_model 的矩阵。"
        "在翻译里这样学得差不多一样好。这里的任务是复制：正确的输出就是输入的那个词元，共享权重的模型本来就指向它，"
        "所以比不共享的学得更快。",
        both=Changes(model={"shared_vocab": True}),  # one vocabulary for both runs: the same batches
        predicted="higher",
    ),
    Variant(
        "learned_positions",
        "Learned positions on longer sentences",
        "学习的位置编码用在更长的句子上",
        "copy",
        Changes(model={"positional": "learned"}),
        "long_bleu",
        "A learned position table only trains the rows of positions it has seen. On sentences longer than any in "
        "training, the later rows are still random: the learned variant does worse there (a lower BLEU), where "
        "sinusoids of the same formula carry on a little further.",
        "学习得到的位置表只训练了见过的那些位置的行。遇到比训练时更长的句子，后面的行还是随机的："
        "学习的变体在那里表现更差（BLEU 更低），而按同一公式算出的正弦编码能再往后多撑一点。",
        baseline=Changes(model={"positional": "sinusoidal"}),
    ),
)


def variant_named(name: str) -> Variant:
    """The bundled experiment ``name`` (as typed, e.g. "no_positional"); a ValueError names the others."""
    for v in VARIANTS:
        if v.name == name:
            return v
    raise ValueError(f"no experiment named {name!r}; choose one of {', '.join(v.name for v in VARIANTS)}")
