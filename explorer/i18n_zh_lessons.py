"""简体中文 for lessons (explorer/lessons/runner.py and the File menu's lesson commands)."""

ZH_LESSONS: dict[str, str] = {
    "Open a lesson…": "打开一节课…",
    "Add this view to a lesson…": "把当前视图加为一张幻灯片…",
    "This lesson cannot be opened: {problems}": "这节课无法打开：{problems}",
    "Open a lesson": "打开一节课",
    "Lessons (*.toml *.json)": "课程文件 (*.toml *.json)",
    "Add this view to a lesson": "把当前视图加入一节课",
    "The slide's text:": "幻灯片的文字：",
    "The slide's text in Chinese:": "幻灯片的中文文字：",
    "Slide added to {path}": "幻灯片已加入 {path}",
    "◀ Slide": "◀ 上一张",
    "Close the lesson": "结束这节课",
    "{title} — slide {n} of {total}": "{title}——第 {n} 张，共 {total} 张",
    "Show the answer": "显示答案",
    "Slide ▶": "下一张 ▶",
}
