"""简体中文 for real models: File → Get a model (explorer/get_model.py) and the int8 fast mode of decoding
(explorer/panels/int8_switch.py): English source string → Chinese."""

ZH_GET_MODEL: dict[str, str] = {
    "Get a model from the Hub…": "从 Hub 获取模型…",
    "Get a model": "获取模型",
    "Get a real model…": "获取一个真实模型…",
    "Translation, English → Chinese (Marian: 6 + 6 layers, d 512)": "翻译，英语 → 中文（Marian：6 + 6 层，d 512）",
    "Translation, Chinese → English (Marian: 6 + 6 layers, d 512)": "翻译，中文 → 英语（Marian：6 + 6 层，d 512）",
    "GPT-2: continues a text (12 layers, 124 M parameters)": "GPT-2：续写文本（12 层，1.24 亿参数）",
    "DistilGPT-2: a smaller GPT-2 (6 layers)": "DistilGPT-2：较小的 GPT-2（6 层）",
    "BERT, Chinese: fills in a masked character (12 layers)": "BERT 中文：填出被掩码的字（12 层）",
    "BERT, English: fills in a masked word (12 layers)": "BERT 英文：填出被掩码的词（12 层）",
    "Models that open in this program, fetched from the Hugging Face Hub into its cache (the one transformers "
    "uses): only the files this program reads. Any other Marian, GPT-2 or BERT model can be typed by its id.": (
        "能在本程序中打开的模型，从 Hugging Face Hub 下载到它的缓存（与 transformers 共用），只下载本程序读取的文件。"
        "其他 Marian、GPT-2 或 BERT 模型可以输入其 id。"
    ),
    "Get and open": "获取并打开",
    "Already in the cache (open without network):": "已在缓存中（无需网络即可打开）：",
    "{n} MB": "{n} MB",
    "about {n} MB": "约 {n} MB",
    "{done} of {total}": "{done} / {total}",
    "{rate}/s": "{rate}/秒",
    "{t} left": "剩余 {t}",
    "Cancelled. The files already fetched stay in the cache.": "已取消。已经下载的文件保留在缓存中。",
    "Model id:": "模型 id：",
    "Cancel download": "取消下载",
    "Close": "关闭",
    "none yet": "暂无",
    "Choose a model in the list, or type its id (owner/name).": "在列表中选择一个模型，或输入它的 id（owner/name）。",
    "Asking the Hub for {id}…": "正在向 Hub 查询 {id}…",
    "Cancelling…": "正在取消…",
    "Fetched. Opening it…": "已下载，正在打开…",
    "Opus-MT translators, GPT-2 and BERT from the Hugging Face Hub, fetched into its cache and opened here; "
    "also without network, from the cache": (
        "来自 Hugging Face Hub 的 Opus-MT 翻译模型、GPT-2 和 BERT：下载到它的缓存后在这里打开；没有网络时也可从缓存打开"
    ),
    "int8 (faster)": "int8（更快）",
    "Decode with 8-bit weights in the decoder's linear layers (dynamic quantisation): about twice as fast on a "
    "CPU, and close to float32 but not equal. Off: float32, exact.": (
        "解码器的线性层使用 8 位权重（动态量化）解码：在 CPU 上约快一倍，"
        "结果接近 float32 但不完全相同。关闭：float32，精确。"
    ),
    "int8: {same} of {n} check sentences decode as in float32; a chosen token's log-probability moves ≤ {d}": (
        "int8：{n} 个检查句子中有 {same} 个与 float32 解码相同；所选词元的对数概率变化 ≤ {d}"
    ),
}
