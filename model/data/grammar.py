"""A compositional English↔Chinese teaching grammar, written for this project.

Every sentence is generated on both sides at once from the same choices, so the
pairs are exact translations. What it teaches a model (and a student):

- word order moves: English puts time and place phrases last ("I read a book in
  the library yesterday."), Chinese puts them before the verb
  (我昨天在图书馆看了一本书。);
- measure words between number and noun (一本书, 两只猫, 三杯咖啡) and 两, not 二,
  before a measure word;
- possessive 的 (my teacher → 我的老师, Li Hua's cat → 李华的猫) and 的 after
  two-syllable adjectives (一本有意思的书, but 一本新书);
- past 了 after the verb, negation 不 (present, future) and 没 (past, no 了), 没有
  as the negation of 有; past and future sentences come with and without a time
  word (Li Hua bought a book. → 李华买了一本书。), so the tense is read from the
  verb, never guessed from 昨天 or 明天;
- yes/no questions: English inverts (Does she…? Did he…? Will they…? Is it…?),
  Chinese adds 吗;
- adjective predicates with 很 and no 是 (She is busy. → 她很忙。), while "very"
  is 非常; 在 as a verb (My cat is in the kitchen. → 我的猫在厨房。);
- one Chinese verb, two English ones (看书 read a book, 看电影 watch a movie).

Splits hold out *combinations*: a fixed share of (subject, verb, object),
(subject, adjective), (subject, noun) and (subject, place) combinations never
occurs in training; valid and test sentences use only held-out combinations
(different ones for each), so a model is measured on generalising, not recall.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field

# -- lexicon ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Person:
    """Someone who can be a subject (or an object of people-verbs)."""

    en: str
    zh: str
    person: int  # 1, 2 or 3 (English agreement)
    plural: bool = False
    object_en: str = ""  # object form (me, him…); names keep their form
    possessive_en: str = ""  # my, his, Li Hua's…

    @property
    def key(self) -> str:
        return self.en


PRONOUNS = [
    Person("I", "我", 1, False, "me", "my"),
    Person("you", "你", 2, False, "you", "your"),
    Person("he", "他", 3, False, "him", "his"),
    Person("she", "她", 3, False, "her", "her"),
    Person("we", "我们", 1, True, "us", "our"),
    Person("they", "他们", 3, True, "them", "their"),
]
NAMES = [
    Person(en, zh, 3, False, en, en + "'s")
    for en, zh in [
        ("Li Hua", "李华"),
        ("Xiao Ming", "小明"),
        ("Wang Fang", "王芳"),
        ("Zhang Wei", "张伟"),
        ("Anna", "安娜"),
        ("David", "大卫"),
    ]
]


@dataclass(frozen=True)
class Noun:
    en: str  # singular
    en_plural: str
    zh: str
    mw: str  # measure word
    kind: str  # category, decides which verbs and adjectives fit
    container: tuple[str, str] | None = None  # mass nouns: ("cup", "cups") of coffee

    @property
    def key(self) -> str:
        return self.en


def _nouns(kind: str, mw: str, rows: str) -> list[Noun]:
    """rows: 'singular/plural=中文; …' (plural defaults to singular + s)."""
    out = []
    for row in rows.split(";"):
        en, zh = (s.strip() for s in row.split("="))
        sg, _, pl = en.partition("/")
        out.append(Noun(sg, pl or sg + "s", zh, mw, kind))
    return out


def _mass(kind: str, container_en: tuple[str, str], mw: str, rows: str) -> list[Noun]:
    out = []
    for row in rows.split(";"):
        en, zh = (s.strip() for s in row.split("="))
        out.append(Noun(en, en, zh, mw, kind, container_en))
    return out


NOUNS: list[Noun] = [
    *_nouns("reading", "本", "book=书; dictionary/dictionaries=词典; magazine=杂志; novel=小说"),
    *_nouns("reading", "份", "newspaper=报纸"),
    *_nouns("fruit", "个", "apple=苹果; orange=橙子; egg=鸡蛋; pear=梨; watermelon=西瓜"),
    *_nouns("animal", "只", "cat=猫; dog=狗; bird=鸟; rabbit=兔子; panda=熊猫; duck=鸭子"),
    *_nouns("animal", "匹", "horse=马"),
    *_nouns("food", "个", "dumpling=饺子; sandwich/sandwiches=三明治"),
    *_nouns("food", "根", "banana=香蕉"),
    *_nouns("fish", "条", "fish/fish=鱼"),
    *_mass("drink", ("cup", "cups"), "杯", "coffee=咖啡; tea=茶"),
    *_mass("drink", ("glass", "glasses"), "杯", "water=水; milk=牛奶; juice=果汁"),
    *_mass("meal", ("bowl", "bowls"), "碗", "rice=米饭; noodles=面条; soup=汤"),
    *_nouns("paper", "张", "ticket=票; photo=照片; map=地图; table=桌子"),
    *_nouns("vehicle", "辆", "car=车; bicycle=自行车; bus/buses=公共汽车"),
    *_nouns("clothes", "件", "shirt=衬衫; coat=外套; sweater=毛衣"),
    *_nouns("clothes", "条", "skirt=裙子"),
    *_nouns("clothes", "顶", "hat=帽子"),
    *_nouns("message", "封", "letter=信; email=邮件"),
    *_nouns("screen", "部", "movie=电影"),
    *_nouns("device", "个", "phone=手机"),
    *_nouns("device", "台", "computer=电脑; television=电视; camera=相机"),
    *_nouns("tool", "把", "chair=椅子; umbrella=伞; key=钥匙; knife/knives=刀; spoon=勺子"),
    *_nouns("tool", "支", "pen=笔"),
    *_nouns("song", "首", "song=歌"),
    *_nouns("story", "个", "story/stories=故事"),
    *_nouns("question", "个", "question=问题"),
    *_nouns("cake", "块", "cake=蛋糕; watch/watches=手表"),
    *_nouns("bag", "个", "bag=包; box/boxes=盒子"),
    *_nouns("room", "个", "room=房间; kitchen=厨房; classroom=教室"),
    *_nouns("door", "扇", "door=门; window=窗户"),
    *_nouns("flower", "朵", "flower=花"),
    *_nouns("tree", "棵", "tree=树"),
]
# Things that are always bare (no number): school subjects and languages.
SUBJECTS = [
    Noun(en, en, zh, "", "subject")
    for en, zh in [("Chinese", "中文"), ("English", "英文"), ("math", "数学"), ("music", "音乐"), ("history", "历史")]
]
PEOPLE_NOUNS = _nouns(
    "person",
    "个",
    "teacher=老师; friend=朋友; mother=妈妈; father=爸爸; brother=哥哥; sister=姐姐; classmate=同学; "
    "neighbor=邻居; child/children=孩子; doctor=医生; student=学生",
)
PROFESSIONS = [
    Noun(en, pl or en + "s", zh, "个", "profession")
    for en, pl, zh in [
        ("teacher", "", "老师"),
        ("student", "", "学生"),
        ("doctor", "", "医生"),
        ("nurse", "", "护士"),
        ("cook", "", "厨师"),
        ("driver", "", "司机"),
        ("worker", "", "工人"),
        ("lawyer", "", "律师"),
        ("singer", "", "歌手"),
        ("engineer", "", "工程师"),
        ("farmer", "", "农民"),
        ("waiter", "", "服务员"),
        ("police officer", "", "警察"),
        ("writer", "", "作家"),
    ]
]


@dataclass(frozen=True)
class Verb:
    en: tuple[str, str, str]  # base, third person singular, past
    zh: str
    objects: tuple[str, ...]  # noun kinds it takes
    stative: bool = False  # states (like, have, know…): present only, no 了, no time word
    have: bool = False  # 有: negated with 没有
    counted: bool = True  # takes "a book", "two cats" (not for like/love/miss/know)

    @property
    def key(self) -> str:
        return self.en[0]


def _v(forms: str, zh: str, objects: str, **kw) -> Verb:
    base, third, past = (f.strip() for f in forms.split(","))
    return Verb((base, third, past), zh, tuple(objects.split()), **kw)


THINGS = "reading fruit food animal fish drink meal paper vehicle clothes message device tool song cake bag flower"
VERBS: list[Verb] = [
    _v("read, reads, read", "看", "reading message"),
    _v("watch, watches, watched", "看", "screen"),
    _v(
        "buy, buys, bought",
        "买",
        "reading fruit food animal fish drink paper vehicle clothes device tool cake bag flower",
    ),
    _v("sell, sells, sold", "卖", "reading fruit food animal fish paper vehicle clothes device tool cake bag flower"),
    _v("eat, eats, ate", "吃", "fruit food meal cake fish"),
    _v("drink, drinks, drank", "喝", "drink"),
    _v("write, writes, wrote", "写", "message song story"),
    _v("listen to, listens to, listened to", "听", "song story"),
    _v("sing, sings, sang", "唱", "song"),
    _v("draw, draws, drew", "画", "animal fish flower tree map"),
    _v("look for, looks for, looked for", "找", "reading animal tool device bag person"),
    _v("bring, brings, brought", "带", "reading tool device bag cake flower"),
    _v("make, makes, made", "做", "cake meal food"),
    _v("borrow, borrows, borrowed", "借", "reading tool vehicle device"),
    _v("wash, washes, washed", "洗", "vehicle clothes fruit"),
    _v("fix, fixes, fixed", "修", "vehicle device tool door"),
    _v("clean, cleans, cleaned", "打扫", "room"),
    _v("open, opens, opened", "打开", "door bag"),
    _v("close, closes, closed", "关", "door"),
    _v("wear, wears, wore", "穿", "clothes"),
    _v("use, uses, used", "用", "device tool reading"),
    _v("take, takes, took", "拍", "photo"),
    _v("feed, feeds, fed", "喂", "animal fish"),
    _v("help, helps, helped", "帮助", "person"),
    _v("wait for, waits for, waited for", "等", "person"),
    _v("answer, answers, answered", "回答", "question"),
    _v("learn, learns, learned", "学", "subject"),
    _v("teach, teaches, taught", "教", "subject"),
    _v("like, likes, liked", "喜欢", THINGS + " screen subject person", stative=True, counted=False),
    _v("love, loves, loved", "爱", "animal person", stative=True, counted=False),
    _v("miss, misses, missed", "想", "person", stative=True, counted=False),
    _v("know, knows, knew", "认识", "person", stative=True, counted=False),
    _v("need, needs, needed", "需要", "reading device tool vehicle drink", stative=True),
    _v("want, wants, wanted", "要", "drink meal cake fruit food reading", stative=True),
    _v("have, has, had", "有", "reading animal fish vehicle device tool bag", stative=True, have=True),
]


@dataclass(frozen=True)
class Adjective:
    en: str
    zh: str
    fits: tuple[str, ...]  # noun kinds (attributive) or "person"/"thing" (predicative)

    @property
    def attributive_zh(self) -> str:
        # one-syllable adjectives join the noun directly (新书); longer ones take 的 (有意思的书)
        return self.zh if len(self.zh) == 1 else self.zh + "的"

    @property
    def key(self) -> str:
        return self.en


ATTRIBUTIVE = [
    Adjective("big", "大", ("fruit", "animal", "fish", "vehicle", "bag", "room", "paper", "cake", "tree")),
    Adjective("small", "小", ("fruit", "animal", "fish", "vehicle", "bag", "room", "cake", "tree")),
    Adjective("new", "新", ("reading", "vehicle", "clothes", "device", "tool", "bag", "song", "screen")),
    Adjective("old", "旧", ("reading", "vehicle", "clothes", "device", "tool", "bag")),
    Adjective("red", "红色", ("vehicle", "clothes", "bag", "flower", "fruit", "tool")),
    Adjective("blue", "蓝色", ("vehicle", "clothes", "bag", "tool")),
    Adjective("white", "白色", ("animal", "vehicle", "clothes", "bag", "flower")),
    Adjective("black", "黑色", ("animal", "vehicle", "clothes", "bag", "tool")),
    Adjective("beautiful", "漂亮", ("clothes", "flower", "bag", "paper")),
    Adjective("cute", "可爱", ("animal",)),
    Adjective("interesting", "有意思", ("reading", "screen", "story", "song")),
    Adjective("cheap", "便宜", ("reading", "clothes", "device", "bag", "tool")),
]
PREDICATIVE = [
    Adjective(en, zh, (fits,))
    for en, zh, fits in [
        ("busy", "忙", "person"),
        ("tired", "累", "person"),
        ("happy", "高兴", "person"),
        ("hungry", "饿", "person"),
        ("tall", "高", "person"),
        ("young", "年轻", "person"),
        ("smart", "聪明", "person"),
        ("kind", "好", "person"),
        ("big", "大", "thing"),
        ("small", "小", "thing"),
        ("new", "新", "thing"),
        ("old", "旧", "thing"),
        ("expensive", "贵", "thing"),
        ("cheap", "便宜", "thing"),
        ("beautiful", "漂亮", "thing"),
        ("interesting", "有意思", "thing"),
    ]
]

TIME_WORDS = {
    "present": [
        ("every day", "每天"),
        ("every morning", "每天早上"),
        ("every week", "每个星期"),
        ("every evening", "每天晚上"),
    ],
    "past": [
        ("yesterday", "昨天"),
        ("last week", "上个星期"),
        ("last year", "去年"),
        ("this morning", "今天早上"),
        ("last night", "昨天晚上"),
        ("the day before yesterday", "前天"),
    ],
    "future": [
        ("tomorrow", "明天"),
        ("next week", "下个星期"),
        ("next year", "明年"),
        ("tonight", "今天晚上"),
        ("the day after tomorrow", "后天"),
    ],
}
PLACES = [
    ("at home", "家"),
    ("at school", "学校"),
    ("in the library", "图书馆"),
    ("in the park", "公园"),
    ("at the restaurant", "饭馆"),
    ("in the classroom", "教室"),
    ("at the store", "商店"),
    ("in the kitchen", "厨房"),
    ("at the hospital", "医院"),
    ("in the office", "办公室"),
    ("at the station", "车站"),
    ("at the supermarket", "超市"),
    ("in the cafe", "咖啡馆"),
    ("at the airport", "机场"),
    ("in the garden", "花园"),
    ("at the bank", "银行"),
    ("in the museum", "博物馆"),
    ("at the hotel", "酒店"),
    ("at the cinema", "电影院"),
]
_COUNTING = {"a", "an", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"}
NUMBERS = [
    ("one", "一"),
    ("two", "两"),
    ("three", "三"),
    ("four", "四"),
    ("five", "五"),
    ("six", "六"),
    ("seven", "七"),
    ("eight", "八"),
    ("nine", "九"),
    ("ten", "十"),
]

# "photo" is taken (拍), "map" is drawn: single nouns with their own kinds
_PHOTO = next(n for n in NOUNS if n.en == "photo")
_MAP = next(n for n in NOUNS if n.en == "map")


def _nouns_of(kinds: tuple[str, ...]) -> list[Noun]:
    out = []
    for kind in kinds:
        if kind == "photo":
            out.append(_PHOTO)
        elif kind == "map":
            out.append(_MAP)
        elif kind == "subject":
            out.extend(SUBJECTS)
        elif kind != "person":
            out.extend(n for n in NOUNS if n.kind == kind)
    return out


def vocabulary() -> tuple[set[str], set[str]]:
    """English words and Chinese words the grammar can produce (for the README/tests)."""
    en: set[str] = set()
    zh: set[str] = set()

    def add(e: str, z: str) -> None:
        en.update(e.replace("'s", "").split())
        zh.add(z)

    for p in PRONOUNS + NAMES:
        add(f"{p.en} {p.object_en} {p.possessive_en}", p.zh)
    for n in NOUNS + SUBJECTS + PEOPLE_NOUNS + PROFESSIONS:
        add(f"{n.en} {n.en_plural} {' '.join(n.container or ())}", n.zh)
    for v in VERBS:
        add(" ".join(v.en), v.zh)
    for a in ATTRIBUTIVE + PREDICATIVE:
        add(a.en, a.zh)
    for words in TIME_WORDS.values():
        for e, z in words:
            add(e, z)
    for e, z in PLACES + NUMBERS:
        add(e, z)
    add("a an this that do does did not will is are am was were very", "这 那 不 没 没有 会 了 吗 很 非常 是 在 的")
    return en, zh


# -- noun phrases -----------------------------------------------------------------------


@dataclass(frozen=True)
class Phrase:
    en: str
    zh: str


def _article(word: str) -> str:
    return "an" if word[0].lower() in "aeiou" else "a"


def _counted(noun: Noun, n: int, adj: Adjective | None) -> Phrase:
    """a red car / two cups of coffee ↔ 一辆红色的车 / 两杯咖啡"""
    num_en, num_zh = NUMBERS[n - 1]
    adj_en = f"{adj.en} " if adj else ""
    adj_zh = adj.attributive_zh if adj else ""
    if noun.container:
        unit = noun.container[0] if n == 1 else noun.container[1]
        head = f"{unit} of {noun.en}"
        first = unit
    else:
        head = f"{adj_en}{noun.en if n == 1 else noun.en_plural}"
        first = head
    en = f"{_article(first)} {head}" if n == 1 else f"{num_en} {head}"
    return Phrase(en, f"{num_zh}{noun.mw}{adj_zh}{noun.zh}")


def _demonstrative(noun: Noun, near: bool) -> Phrase:
    """this book / that cup of tea ↔ 这本书 / 那杯茶"""
    head = f"{noun.container[0]} of {noun.en}" if noun.container else noun.en
    return Phrase(f"{'this' if near else 'that'} {head}", f"{'这' if near else '那'}{noun.mw}{noun.zh}")


def _possessed(owner: Person, noun: Noun) -> Phrase:
    """my book / Li Hua's cat ↔ 我的书 / 李华的猫"""
    return Phrase(f"{owner.possessive_en} {noun.en}", f"{owner.zh}的{noun.zh}")


def _bare(noun: Noun) -> Phrase:
    """books / coffee / Chinese ↔ 书 / 咖啡 / 中文 (things in general)"""
    return Phrase(noun.en_plural if not noun.container and noun.kind != "subject" else noun.en, noun.zh)


# -- sentences --------------------------------------------------------------------------


@dataclass(frozen=True)
class Sentence:
    en: str
    zh: str
    key: tuple[str, ...]  # the combination that splits hold out
    kind: str  # action | adjective | copula | location


def _cap(text: str) -> str:
    return text[0].upper() + text[1:]


def _be(subject: Person, past: bool) -> str:
    if past:
        return "were" if subject.plural or subject.person == 2 else "was"
    if subject.person == 1 and not subject.plural:
        return "am"
    return "are" if subject.plural or subject.person == 2 else "is"


def _is_third_singular(subject: Person) -> bool:
    return subject.person == 3 and not subject.plural


class GrammarGenerator:
    """Draws sentence pairs; all choices from one seeded random generator."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def subject(self) -> tuple[Person, str]:
        """A subject and its combination key (its head word)."""
        r = self.rng.random()
        if r < 0.5:
            p = self.rng.choice(PRONOUNS)
            return p, p.key
        if r < 0.75:
            p = self.rng.choice(NAMES)
            return p, p.key
        owner = self.rng.choice(PRONOUNS + NAMES)
        noun = self.rng.choice(PEOPLE_NOUNS)
        return Person(f"{owner.possessive_en} {noun.en}", f"{owner.zh}的{noun.zh}", 3, False), noun.key

    def person_object(self, subject: Person) -> tuple[Phrase, str]:
        if self.rng.random() < 0.4:
            p = self.rng.choice([n for n in NAMES if n.en != subject.en])
            return Phrase(p.en, p.zh), p.key
        noun = self.rng.choice(PEOPLE_NOUNS)
        return _possessed(self.owner(subject), noun), noun.key

    def owner(self, subject: Person) -> Person:
        """A possessor that is not the subject itself (no "Xiao Ming likes Xiao Ming's cake")."""
        return self.rng.choice([p for p in PRONOUNS + NAMES if p.en != subject.en])

    def thing_object(self, noun: Noun, forms: tuple[str, ...], subject: Person) -> Phrase:
        form = self.rng.choice(forms)
        if noun.kind == "subject" or form == "bare":
            return _bare(noun)
        if form == "counted":
            n = self.rng.choice([1, 1, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9, 10])
            fitting = [a for a in ATTRIBUTIVE if noun.kind in a.fits]
            adj = self.rng.choice(fitting) if fitting and self.rng.random() < 0.35 else None
            return _counted(noun, n, adj)
        if form == "this":
            return _demonstrative(noun, near=self.rng.random() < 0.5)
        return _possessed(self.owner(subject), noun)

    def action(self) -> Sentence:
        rng = self.rng
        verb = rng.choice(VERBS)
        subject, s_key = self.subject()
        tense = "present" if verb.stative else rng.choice(["present", "past", "future"])
        mood = rng.choices(["statement", "negative", "question"], weights=[5, 2, 2])[0]
        # which object forms read naturally in this tense and mood
        forms: tuple[str, ...]
        if mood == "negative" or not verb.counted:
            forms = ("bare", "this", "possessive")  # 我没买那本书, not *我没买一本书
        elif tense == "past":
            forms = ("counted", "this", "possessive")  # 了 wants a bounded object
        else:
            forms = ("bare", "counted", "this", "possessive")
        people = "person" in verb.objects
        nouns = _nouns_of(verb.objects)
        if people and (not nouns or rng.random() < 0.5):
            obj, o_key = self.person_object(subject)
        else:
            noun = rng.choice(nouns)
            obj, o_key = self.thing_object(noun, forms, subject), noun.key
        if verb.stative:
            time = None  # not *"I have two cats every day"
        elif tense == "present":
            # "I eat an apple every day", not "I eat an apple"
            counting = obj.en.split()[0] in _COUNTING
            time = rng.choice(TIME_WORDS[tense]) if rng.random() < 0.35 or counting else None
        elif rng.random() < 0.5 or self._past_reads_as_present(verb, subject, tense, mood):
            # past and future come with and without a time word, so the tense (了, 会) has to be
            # learned from the verb form, not from 昨天 or 明天
            time = rng.choice(TIME_WORDS[tense])
        else:
            time = None
        place = rng.choice(PLACES) if not verb.stative and rng.random() < 0.3 else None
        return self._render_action(subject, verb, obj, tense, mood, time, place, (s_key, verb.key, o_key))

    @staticmethod
    def _past_reads_as_present(verb: Verb, subject: Person, tense: str, mood: str) -> bool:
        """True for "I read this book.": a past statement whose verb form is also the present one.

        Only a time word tells such a sentence's tense, so it always gets one.
        """
        base, third, past = verb.en
        present = third if _is_third_singular(subject) else base
        return tense == "past" and mood == "statement" and past == present

    def _render_action(self, subject, verb, obj, tense, mood, time, place, key) -> Sentence:
        base, third, past = verb.en
        tail_en = obj.en + (f" {place[0]}" if place else "") + (f" {time[0]}" if time else "")
        s_en = subject.en
        third_sg = _is_third_singular(subject)
        if mood == "question":
            aux = {"present": "Does" if third_sg else "Do", "past": "Did", "future": "Will"}[tense]
            en = f"{aux} {s_en} {base} {tail_en}?"
        elif mood == "negative":
            aux = {"present": "does not" if third_sg else "do not", "past": "did not", "future": "will not"}[tense]
            en = _cap(f"{s_en} {aux} {base} {tail_en}.")
        else:
            form = {"present": third if third_sg else base, "past": past, "future": f"will {base}"}[tense]
            en = _cap(f"{s_en} {form} {tail_en}.")

        # Chinese: S [time] [neg/会] [在 place] V [了] O [吗]
        zh = subject.zh + (time[1] if time else "")
        if mood == "negative":
            zh += {"present": "没" if verb.have else "不", "past": "没", "future": "不会"}[tense]
        elif tense == "future":
            zh += "会"
        zh += f"在{place[1]}" if place else ""
        zh += verb.zh
        if tense == "past" and mood != "negative":
            zh += "了"
        zh += obj.zh
        zh += "吗？" if mood == "question" else "。"
        return Sentence(en, zh, key, "action")

    def adjective(self) -> Sentence:
        """She is busy. ↔ 她很忙。 / This book is very interesting. ↔ 这本书非常有意思。"""
        rng = self.rng
        if rng.random() < 0.5:
            subject, s_key = self.subject()
            adj = rng.choice([a for a in PREDICATIVE if a.fits == ("person",)])
        else:
            noun = rng.choice([n for n in NOUNS if not n.container])
            phrase = (
                _demonstrative(noun, rng.random() < 0.5)
                if rng.random() < 0.5
                else _possessed(rng.choice(PRONOUNS + NAMES), noun)
            )
            subject, s_key = Person(phrase.en, phrase.zh, 3, False), noun.key
            adj = rng.choice([a for a in PREDICATIVE if a.fits == ("thing",)])
        past = rng.random() < 0.3
        time = rng.choice(TIME_WORDS["past"]) if past else None
        mood = rng.choices(["statement", "very", "negative", "question"], weights=[4, 2, 2, 2])[0]
        be = _be(subject, past)
        when = f" {time[0]}" if time else ""
        zh_subject = subject.zh + (time[1] if time else "")
        if mood == "question":
            en = f"{_cap(be)} {subject.en} {adj.en}{when}?"
            zh = f"{zh_subject}{adj.zh}吗？"
        elif mood == "negative":
            en = _cap(f"{subject.en} {be} not {adj.en}{when}.")
            zh = f"{zh_subject}不{adj.zh}。"
        elif mood == "very":
            en = _cap(f"{subject.en} {be} very {adj.en}{when}.")
            zh = f"{zh_subject}非常{adj.zh}。"
        else:
            en = _cap(f"{subject.en} {be} {adj.en}{when}.")
            zh = f"{zh_subject}很{adj.zh}。"
        return Sentence(en, zh, (s_key, adj.key), "adjective")

    def copula(self) -> Sentence:
        """He is a doctor. ↔ 他是医生。 / Is Anna your friend? ↔ 安娜是你的朋友吗？"""
        rng = self.rng
        subject, s_key = self.subject()
        if rng.random() < 0.6:
            noun = rng.choice(PROFESSIONS)
            pred_zh = noun.zh
            pred_en = noun.en_plural if subject.plural else f"{_article(noun.en)} {noun.en}"
        else:
            noun = rng.choice(PEOPLE_NOUNS)
            owner = rng.choice(PRONOUNS + NAMES)
            pred_en = f"{owner.possessive_en} {noun.en_plural if subject.plural else noun.en}"
            pred_zh = f"{owner.zh}的{noun.zh}"
        mood = rng.choices(["statement", "negative", "question"], weights=[4, 2, 2])[0]
        be = _be(subject, past=False)
        if mood == "question":
            en, zh = f"{_cap(be)} {subject.en} {pred_en}?", f"{subject.zh}是{pred_zh}吗？"
        elif mood == "negative":
            en, zh = _cap(f"{subject.en} {be} not {pred_en}."), f"{subject.zh}不是{pred_zh}。"
        else:
            en, zh = _cap(f"{subject.en} {be} {pred_en}."), f"{subject.zh}是{pred_zh}。"
        return Sentence(en, zh, (s_key, "be", noun.key), "copula")

    def location(self) -> Sentence:
        """My cat is in the kitchen. ↔ 我的猫在厨房。 (在 as the verb)"""
        rng = self.rng
        if rng.random() < 0.6:
            subject, s_key = self.subject()
        else:
            noun = rng.choice([n for n in NOUNS if n.kind in ("animal", "reading", "device", "bag", "tool")])
            phrase = _possessed(rng.choice(PRONOUNS + NAMES), noun)
            subject, s_key = Person(phrase.en, phrase.zh, 3, False), noun.key
        place = rng.choice(PLACES)
        past = rng.random() < 0.3
        time = rng.choice(TIME_WORDS["past"]) if past else None
        mood = rng.choices(["statement", "negative", "question"], weights=[4, 2, 2])[0]
        be = _be(subject, past)
        when = f" {time[0]}" if time else ""
        zh_subject = subject.zh + (time[1] if time else "")
        if mood == "question":
            en, zh = f"{_cap(be)} {subject.en} {place[0]}{when}?", f"{zh_subject}在{place[1]}吗？"
        elif mood == "negative":
            en, zh = _cap(f"{subject.en} {be} not {place[0]}{when}."), f"{zh_subject}不在{place[1]}。"
        else:
            en, zh = _cap(f"{subject.en} {be} {place[0]}{when}."), f"{zh_subject}在{place[1]}。"
        return Sentence(en, zh, (s_key, "at", place[0]), "location")

    def sentence(self) -> Sentence:
        kind = self.rng.choices(["action", "adjective", "copula", "location"], weights=[10, 3, 2, 2])[0]
        return getattr(self, kind)()


# -- splits ------------------------------------------------------------------------------


def _held_out_bucket(key: tuple[str, ...], seed: int, held_out_fraction: float) -> str:
    """'train', 'valid' or 'test' for a combination, fixed by a hash (independent of draw order)."""
    digest = hashlib.sha256(("|".join(key) + f"#{seed}").encode()).digest()
    u = int.from_bytes(digest[:8], "big") / 2**64
    if u >= held_out_fraction:
        return "train"
    return "valid" if u < held_out_fraction / 2 else "test"


@dataclass
class GrammarSplits:
    train: list[Sentence] = field(default_factory=list)
    valid: list[Sentence] = field(default_factory=list)
    test: list[Sentence] = field(default_factory=list)


def generate_grammar(
    n_train: int = 20000,
    n_valid: int = 500,
    n_test: int = 500,
    seed: int = 0,
    held_out_fraction: float = 0.12,
) -> GrammarSplits:
    """Distinct sentence pairs, split so that valid and test combinations never occur in training."""
    gen = GrammarGenerator(seed)
    splits = GrammarSplits()
    seen: set[str] = set()
    wanted = {"train": n_train, "valid": n_valid, "test": n_test}
    attempts, limit = 0, 50 * (n_train + n_valid + n_test)
    while any(len(getattr(splits, k)) < n for k, n in wanted.items()):
        attempts += 1
        if attempts > limit:
            raise RuntimeError("the grammar cannot produce that many distinct sentences; ask for fewer")
        s = gen.sentence()
        if s.en in seen:
            continue
        bucket = _held_out_bucket(s.key, seed, held_out_fraction)
        target = getattr(splits, bucket)
        if len(target) < wanted[bucket]:
            seen.add(s.en)
            target.append(s)
    return splits
