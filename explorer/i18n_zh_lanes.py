"""简体中文 for the Lanes panel (explorer/panels/lanes.py): English source string → Chinese."""

ZH_LANES: dict[str, str] = {
    "Lanes": "多路解码",
    "Lane": "解码方式",
    "Output so far": "目前的输出",
    "log P": "log P",
    "Parts at": "分岔处",
    "◀ Back": "◀ 后退",
    "Step ▶": "下一步 ▶",
    "Run to the end": "运行到结束",
    "Reset": "重置",
    "sampling T {t:g}, seed {seed}": "采样 T {t:g}，种子 {seed}",
    "greedy": "贪心",
    "beam {k}": "束搜索 {k}",
    "Beam": "束宽",
    "Seeds": "种子数",
    "Sampling lanes, one per seed (1, 2, …): each draws its own tokens": (
        "采样的路数，每个种子一路（1、2、……）：每一路抽取自己的词元"
    ),
    "Decode in lanes": "多路解码",
    "The Decoding panel's sentence: greedy, beam search and sampling side by side": (
        "“解码”面板里的句子：贪心、束搜索和采样并排进行"
    ),
    "Type a sentence in the Decoding panel first.": "请先在“解码”面板里输入一个句子。",
    "Lanes decode a translator or a GPT; this model fills masks.": "多路解码用于翻译模型或 GPT；这个模型是填补掩码的。",
    "Press “Decode in lanes” to decode the Decoding panel's sentence several ways.": (
        "点击“多路解码”，用几种方式解码“解码”面板里的句子。"
    ),
    "Step {n} of “{text}”.": "“{text}”的第 {n} 步。",
    "The first lanes part at token {n}.": "最早的分岔出现在第 {n} 个词元。",
    "All lanes agree so far.": "到目前为止各路都一样。",
    "Every lane has finished.": "每一路都已结束。",
    "token {n}": "第 {n} 个词元",
    "Beam tree of the “{lane}” lane (★ length-normalised score)": "“{lane}”这一路的束搜索树（★ 为长度归一化得分）",
    "Press “Decode in lanes” first: there are no lanes to step yet.": (
        "请先点击“多路解码”：现在还没有可以前进的解码路。"
    ),
}
