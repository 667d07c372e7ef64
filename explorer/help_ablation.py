"""The “What am I looking at?” text on switching heads off and the head-importance map (``HELP["head_ablation"]``,
added to :data:`explorer.help.HELP`), English and Chinese."""
# ruff: noqa: E501 — prose: Chinese characters count double towards the line length

ABLATION_HELP: dict[str, dict[str, str]] = {
    "head_ablation": {
        "en": """<p><b>Switching heads off</b> (ablation) asks what a head is for by taking it away. With <b>Switch
heads off</b> pressed, a click on a map of the all-heads grid switches that head off: its output is set to zero before
W<sup>O</sup> mixes the heads (<b>Zero</b>), or replaced by its mean output over held-out sentences (<b>Mean</b>: the
layer still gets a typical value, only nothing about this input). The map is greyed and crossed out, the decoding runs
again, and the line above the grid shows the output before → after, the tokens that changed in red, and the
probability the model now gives each token of its former output. The heads stay off for every view until <b>All heads
on</b>; training always uses every head.</p>
<p><b>Head importance</b> (Michel, Levy and Neubig, 2019, “Are Sixteen Heads Really Better than One?”) does this for
every head in turn: <b>Measure</b> switches one head off, computes the loss and the token accuracy on N held-out
sentences (teacher-forced), switches it on again and goes to the next. The map shows <b>Δloss</b> = loss without the
head − loss with every head: red, the model does worse without it; blue, it does slightly better; white, the head does
not matter for these sentences. Hover a cell for its Δaccuracy too. Many heads of a trained model can go with little
loss; a few cannot. Measure again after more training to see heads become important; the caption says when the map
is of older weights. Cancel keeps the heads already measured. A click on a cell switches that head off.</p>""",
        "zh": """<p><b>关闭注意力头</b>（消融）的思路是：把一个头拿掉，看看它原本起什么作用。按下<b>关闭注意力头</b>后，
在全部注意力头的网格中点击一张图，就会关闭那个头：它的输出在 W<sup>O</sup> 混合各头之前被设为零（<b>置零</b>），
或者用它在留出句子上的平均输出代替（<b>均值</b>：这一层仍能得到一个典型的值，只是不再带有关于这条输入的信息）。
这张图会变灰并被划掉，解码重新运行，网格上方的一行显示前后的输出（变化的词元标红），以及模型现在给原输出中每个词元的概率。
这些头在所有视图中保持关闭，直到按下<b>全部打开</b>；训练始终使用全部的头。</p>
<p><b>注意力头重要性</b>（Michel、Levy 和 Neubig，2019，“Are Sixteen Heads Really Better than One?”）对每个头依次这样做：
<b>测量</b>关闭一个头，在 N 个留出句子上（教师强制）计算损失和词元准确率，再打开它，换下一个。
图中显示 <b>Δ损失</b> = 去掉这个头时的损失 − 使用全部头时的损失：红色表示没有它模型变差；蓝色表示略微变好；
白色表示对这些句子来说这个头无关紧要。把鼠标停在格子上还能看到 Δ准确率。训练好的模型中很多头去掉后损失几乎不变，
只有少数几个去不掉。多训练一会儿再测量一次，可以看到一些头逐渐变得重要；图是用较旧的权重测得时，说明文字会指出。
取消会保留已经测完的头。点击一个格子就会关闭那个头。</p>""",
    },
}
