"""简体中文 for the interface strings of the model families' decoding views (English source string → Chinese)."""

ZH_DECODING: dict[str, str] = {
    # -- decoder-only: a prompt, continued (explorer/panels/decoding.py) --------------------------------------------
    "Prompt": "提示词",
    "Type the beginning of a text and press Enter": "输入一段文字的开头，然后按回车",
    "The beginning of a text. The model continues it one token at a time, each chosen from its probabilities for "
    "the next token: the most probable (Greedy), drawn at random (Sample), or the best continuations kept side by "
    "side (Beam search).": "一段文字的开头。模型一次一个词元地续写它，每个词元都按模型对下一个词元给出的概率来选："
    "取概率最大的（贪心），随机抽取（采样），或同时保留几种最好的续写（束搜索）。",
    "Generate": "生成",
    "Random prompt": "随机提示词",
    "Put the beginning of a random sentence of the test split (sentences the model never trained on) in the box, "
    "for the model to continue.": "把测试集（模型从没训练过的句子）中一个随机句子的开头放进输入框，让模型续写。",
    "Sample": "采样",
    "Temperature": "温度",
    "Divides the scores before the softmax: below 1 sharpens the probabilities towards the most probable token, "
    "above 1 flattens them.": (
        "在 softmax 之前把得分除以温度 T：小于 1 时概率更集中于最可能的词元，大于 1 时概率更平均。"
    ),
    "Top-k": "Top-k",
    "Draw only among the k most probable tokens (0: no cut).": "只在概率最大的 k 个词元中抽取（0：不截断）。",
    "Top-p": "Top-p",
    "Draw only among the most probable tokens whose probabilities add up to p (1: no cut).": (
        "只在概率加起来达到 p 的那些最可能的词元中抽取（1：不截断）。"
    ),
    "Seed": "种子",
    "The same seed draws the same tokens again (random: a new draw each time).": (
        "同一个种子会再次抽出同样的词元（随机：每次重新抽取）。"
    ),
    "random": "随机",
    "Longest continuation in tokens (auto: 50, or what the model's length leaves after the prompt). At most {n}: "
    "the model's length limit.": "续写的最大词元数（自动：50，或提示词之后模型长度剩下的部分）。"
    "最多 {n}：模型的长度上限。",
    "Text": "文本",
    "Continuation": "续写",
    "n-best continuations": "n 个最佳续写",
    "Text so far": "目前的文本",
    "The prompt has {total} tokens but the model reads at most {kept}: it continues the first {kept}, the other "
    "{cut} were ignored.": "提示词有 {total} 个词元，但模型最多只读 {kept} 个："
    "它续写前 {kept} 个，其余 {cut} 个被忽略。",
    # -- the candidates chart (explorer/widgets/candidates.py) --------------------------------------------------------
    "P(token | prefix, source)": "P(词元 | 前缀, 原文)",
    "P(token | text so far)": "P(词元 | 目前的文本)",
    "P(token | text so far) at temperature {t}": "P(词元 | 目前的文本)，温度 {t}",
    "drawn at random": "随机抽中",
    "Sampled: the next token is drawn at random, each with a chance in proportion to its bar; the outlined bar is "
    "the one drawn.": "采样：下一个词元是随机抽取的，每个词元被抽中的机会与它的条长成正比；加框的条就是抽中的词元。",
    "Grey bars were cut by {cuts}: they could not be drawn.": "灰色的条被 {cuts} 截掉了：它们不可能被抽中。",
    "The token drawn, “{token}”, is not among the {n} shown.": "抽中的词元“{token}”不在显示的 {n} 个之中。",
    # -- encoder-only: fill the mask (explorer/panels/fill_mask.py) ---------------------------------------------------
    "P(token | the rest of the sentence)": "P(词元 | 句子的其余部分)",
    "Type a sentence with <mask> where a word is missing, and press Enter": (
        "输入一个句子，在缺词的地方写 <mask>，然后按回车"
    ),
    "An encoder-only model reads the whole sentence at once, left and right of each <mask>, and guesses what is "
    "hidden there.": "仅编码器模型一次读入整个句子，包括每个 <mask> 左边和右边的内容，并猜出那里被藏起来的是什么。",
    "Insert <mask>": "插入 <mask>",
    "Write <mask> at the cursor": "在光标处写入 <mask>",
    "Fill the mask": "填空",
    "Put a random sentence of the test split (sentences the model never trained on) in the box and mask one of its "
    "tokens.": "把测试集（模型从没训练过的句子）中的一个随机句子放进输入框，并把其中一个词元换成掩码。",
    "Guesses": "猜测数",
    "How many guesses to show for each masked position": "每个掩码位置显示多少个猜测",
    "Click a token to mask it; click it again to unmask it.": "点击一个词元把它换成掩码；再点一次取消掩码。",
    "No <mask> in the sentence: write <mask> where a word is missing, or click a token to mask it.": (
        "句子中没有 <mask>：在缺词的地方写 <mask>，或点击一个词元把它换成掩码。"
    ),
    "This <mask> is written in the sentence: delete it there to unmask it.": (
        "这个 <mask> 是写在句子里的：要取消掩码，请在句子中删掉它。"
    ),
    "<mask> written in the sentence": "写在句子里的 <mask>",
    "Type a sentence with <mask> or {mask} where a word is missing, and press Enter": (
        "输入一个句子，在缺词的地方写 <mask> 或 {mask}，然后按回车"
    ),
    "No <mask> or {mask} in the sentence: write one where a word is missing, or click a token to mask it.": (
        "句子中没有 <mask> 或 {mask}：在缺词的地方写一个，或点击一个词元把它换成掩码。"
    ),
    # -- what a step shows while it is computed, at step 0, and after the sentence is edited (decoding.py) -------
    "Computing step {n}…": "正在计算第 {n} 步…",
    "Computing…": "正在计算…",
    "Reading the sentence…": "正在读入句子…",
    "({n} more queued)": "（还有 {n} 个在排队）",
    "Step 0: nothing written yet — press Step ▶ for the first token's candidates": (
        "第 0 步：还没有写出词元——按“单步 ▶”看第一个词元的候选"
    ),
    "Step 0: press Step ▶ to see where the first token looks": "第 0 步：按“单步 ▶”看第一个词元看向哪里",
    "previous sentence": "上一个句子",
    "The sentence in the box is not decoded yet: Decode or Step ▶ starts it.": (
        "输入框里的句子还没有解码：按“解码”或“单步 ▶”开始。"
    ),
    "“{token}”, masked: click to unmask it": "“{token}”，已换成掩码：点击取消掩码",
    "Position {n}: <mask> as written": "位置 {n}：写入的 <mask>",
    "Written as <mask>: there is no original to compare with.": "写入的 <mask>：没有原来的词元可以比较。",
    "Position {n}: was “{token}”": "位置 {n}：原来是“{token}”",
    "The original “{token}” is the model's first guess.": "原来的“{token}”正是模型的第一个猜测。",
    "The original “{token}” is the model's guess number {rank}.": "原来的“{token}”是模型的第 {rank} 个猜测。",
    "The original “{token}” is not among the model's {n} guesses.": "原来的“{token}”不在模型的 {n} 个猜测之中。",
}
