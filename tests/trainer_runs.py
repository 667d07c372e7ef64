"""A Hugging Face ``Seq2SeqTrainer`` run on a tiny Marian (tests/hf_folders.marian_folder), as an engineer's script
would start it: a handful of English–Chinese pairs, a checkpoint every ``save_steps`` steps, ``save_total_limit``,
an evaluation now and then. With :class:`Gate` the Trainer waits after each save until the test has looked."""

from __future__ import annotations

import threading
import warnings
from pathlib import Path
from typing import Any

import transformers

from tests.hf_folders import marian_folder

PAIRS = [
    ("the cat eats fish", "猫吃鱼"),
    ("the dog drinks water", "狗喝水"),
    ("i like tea", "我喜欢茶"),
    ("he reads a book", "他读书"),
]


class Gate(transformers.TrainerCallback):
    """Holds the Trainer after each save (the checkpoint whole, the older ones deleted) until :meth:`open`."""

    def __init__(self) -> None:
        self.saved: list[int] = []  # the steps saved so far
        self._go = threading.Event()
        self.closed = False  # the test gave up waiting: never hold the Trainer again

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.saved.append(state.global_step)
        if not self.closed:
            self._go.wait(timeout=120)
        self._go.clear()

    def open(self) -> None:
        self._go.set()


def seq2seq_trainer(
    root: Path, out: Path, max_steps: int = 8, save_steps: int = 2, callbacks: tuple[Any, ...] = ()
) -> transformers.Seq2SeqTrainer:
    """A Seq2SeqTrainer that writes into ``out``; ``trainer.train()`` runs it."""
    folder = marian_folder(root, spread=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        tokenizer = transformers.MarianTokenizer.from_pretrained(folder)
    model = transformers.MarianMTModel.from_pretrained(folder)
    rows = [dict(**tokenizer(s, text_target=t)) for s, t in PAIRS * 4]
    args = transformers.Seq2SeqTrainingArguments(
        output_dir=str(out),
        max_steps=max_steps,
        save_steps=save_steps,
        save_total_limit=2,
        logging_steps=1,
        eval_strategy="steps",
        eval_steps=4,
        per_device_train_batch_size=4,
        learning_rate=1e-3,
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
    )
    return transformers.Seq2SeqTrainer(
        model=model,
        args=args,
        train_dataset=rows,
        eval_dataset=rows[:4],
        data_collator=transformers.DataCollatorForSeq2Seq(tokenizer, model=model),
        processing_class=tokenizer,
        callbacks=list(callbacks),
    )
