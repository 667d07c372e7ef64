"""A sentence to show first for each task: chosen to exercise what the task teaches."""

SAMPLES = {
    # time word and place move before the verb, a measure word, 的 after a two-syllable adjective, 吗
    "grammar-en-zh": "Did you read two interesting books in the library yesterday?",
    "grammar-zh-en": "你昨天在图书馆看了两本有意思的书吗？",
    "hsk-en-zh": "The library is inside the school.",
    "hsk-zh-en": "图书馆在学校里边。",
    "copy": "3 1 4 1 5 9 2 6 5 3",
    "reverse": "3 1 4 1 5 9 2 6 5 3",
    "sort": "3 1 4 1 5 9 2 6 5 3",
}
