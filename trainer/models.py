"""Actor, critic and reference (DESIGN §9) from any transformers causal LM.

- Actor: the causal LM, fully trained or with LoRA adapters (peft). Its forward returns the
  log-probability of each sampled token and the entropy there, from the final hidden states
  and the output embedding in chunks (trainer.algos.chosen_logprobs): the (T, V) logits of a
  152k vocabulary are never materialised, and positions that predict no sampled token (prompt,
  tool output) never reach the vocabulary projection at all.
- Critic: the same architecture without the LM head, its own weights, and a scalar value head
  (float32, zero-initialised, so the first values are 0).
- Reference: frozen; the LoRA actor with its adapters switched off, or a second copy.

Attention: packed rows hold several documents. `kagent_docs` (registered with transformers'
AttentionInterface) runs SDPA with a causal mask on each document separately, so the fast
flash/cuDNN kernels apply, no (T, T) mask is built, and no document attends to another.
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from trainer.algos import chosen_logprobs
from trainer.config import MODEL_PRESETS, TrainConfig

ATTN = "kagent_docs"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json",
                   "merges.txt", "tokenizer.model", "added_tokens.json", "chat_template.jinja",
                   "chat_template.json")


class ModelError(Exception):
    """A model or checkpoint folder cannot be used as asked; the message says why."""


def doc_attention(module: nn.Module, query: Tensor, key: Tensor, value: Tensor,
                  attention_mask: Tensor | None, scaling: float | None = None, dropout: float = 0.0,
                  **kwargs: Any) -> tuple[Tensor, None]:
    """Causal SDPA inside each document.   # q (B, H, T, D), k/v (B, Hkv, T, D) -> (B, T, H, D)
    `doc_lens` (a tuple of ints summing to T) comes through the model's forward kwargs; without
    it the whole row is one document."""
    lens = kwargs.get("doc_lens") or (query.shape[2],)
    gqa = query.shape[1] != key.shape[1]
    outs, start = [], 0
    for n in lens:
        outs.append(F.scaled_dot_product_attention(
            query[:, :, start:start + n], key[:, :, start:start + n], value[:, :, start:start + n],
            is_causal=True, scale=scaling, dropout_p=dropout if module.training else 0.0, enable_gqa=gqa))
        start += n
    out = outs[0] if len(outs) == 1 else torch.cat(outs, dim=2)
    return out.transpose(1, 2).contiguous(), None


def register_attention() -> None:
    from transformers import AttentionInterface
    from transformers.utils import logging as hf_logging

    AttentionInterface.register(ATTN, doc_attention)
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # weight loading / saving bars; the trainer has its own


def compute_dtype(cfg: TrainConfig, device: torch.device) -> torch.dtype:
    if cfg.dtype == "bf16" or (cfg.dtype == "auto" and device.type == "cuda"):
        return torch.bfloat16
    return torch.float32


@contextmanager
def _quiet_peft() -> Iterator[None]:
    # peft 0.x calls a transformers attribute that transformers 5 deprecated; the warning is
    # theirs, not ours, and pytest's filterwarnings=error would turn it into a failure.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        yield


def load_causal_lm(spec: str, *, dtype: torch.dtype, seed: int) -> Any:
    """A transformers causal LM from a checkpoint folder / model id, or randomly initialised
    (seeded) from a config JSON file."""
    from transformers import AutoConfig, AutoModelForCausalLM

    register_attention()
    if spec in MODEL_PRESETS or (spec.endswith(".json") and Path(spec).is_file()):
        raw = dict(MODEL_PRESETS[spec]) if spec in MODEL_PRESETS else json.loads(Path(spec).read_text())
        config = AutoConfig.for_model(raw.pop("model_type"), **raw)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = AutoModelForCausalLM.from_config(  # type: ignore[no-untyped-call]
                config, attn_implementation=ATTN, dtype=dtype)
    else:
        try:
            model = AutoModelForCausalLM.from_pretrained(spec, attn_implementation=ATTN, dtype=dtype)
        except OSError as exc:  # not a local folder, and the hub could not be reached or has no such model
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ModelError(f"--model {spec}: cannot be loaded ({first[:300]}); offline, point --model at a"
                             " local checkpoint folder, a config JSON, or the built-in preset `tiny`") from None
    return model


def vocab_size(lm: Any) -> int:
    return int(unwrap_lm(lm).get_input_embeddings().weight.shape[0])


def unwrap_lm(lm: Any) -> Any:
    """The transformers model under a peft wrapper (LoRA layers stay injected in it)."""
    return lm.get_base_model() if hasattr(lm, "get_base_model") else lm


def add_lora(model: Any, cfg: TrainConfig) -> Any:
    from peft import LoraConfig, get_peft_model

    targets: str | list[str] = cfg.lora_targets if cfg.lora_targets == "all-linear" else \
        [t.strip() for t in cfg.lora_targets.split(",") if t.strip()]
    lora = LoraConfig(r=cfg.lora_rank, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                      target_modules=targets, bias="none")
    with _quiet_peft():
        return get_peft_model(model, lora)


def load_lora(model: Any, path: Path) -> Any:
    from peft import PeftModel

    with _quiet_peft():
        return PeftModel.from_pretrained(model, str(path), is_trainable=True)


def _decoder_kwargs(doc_lens: tuple[int, ...]) -> dict[str, Any]:
    return {"doc_lens": doc_lens, "use_cache": False}


class Actor(nn.Module):
    """The policy: logprobs and entropy of sampled tokens."""

    def __init__(self, lm: Any, *, chunk: int) -> None:
        super().__init__()
        self.lm = lm
        self.chunk = chunk

    def forward(self, input_ids: Tensor, position_ids: Tensor, doc_lens: tuple[int, ...], pred_pos: Tensor,
                targets: Tensor, temps: Tensor) -> tuple[Tensor, Tensor]:
        """(1, T) ids and positions; (N,) pred_pos, targets, temps -> (N,) logprobs, (N,) entropy."""
        causal = unwrap_lm(self.lm)
        hidden = causal.get_decoder()(input_ids=input_ids, position_ids=position_ids,
                                      **_decoder_kwargs(doc_lens)).last_hidden_state
        h = hidden[0].index_select(0, pred_pos)
        return chosen_logprobs(h, causal.get_output_embeddings().weight, targets, temps, self.chunk)

    def tie_weights(self) -> None:
        """Re-tie the output embedding to the input one (accelerate calls this on the model it
        prepares for FSDP after moving it to the meta device, which unties them)."""
        unwrap_lm(self.lm).tie_weights()

    def reference(self) -> Any:
        """Context in which this actor is its own reference (LoRA: adapters off)."""
        return self.lm.disable_adapter() if hasattr(self.lm, "disable_adapter") else nullcontext()


class ValueHead(nn.Linear):
    """The critic's float32 value head: a class of its own so that FSDP makes it a unit of its own
    (FSDP2 reduce-scatters one gradient dtype per unit; the backbone is bf16 on GPU)."""


class Critic(nn.Module):
    """Value of the state before each sampled token."""

    def __init__(self, backbone: Any, hidden_size: int) -> None:
        super().__init__()
        self.backbone = backbone
        self.value_head = ValueHead(hidden_size, 1, dtype=torch.float32)
        nn.init.zeros_(self.value_head.weight)
        nn.init.zeros_(self.value_head.bias)

    def forward(self, input_ids: Tensor, position_ids: Tensor, doc_lens: tuple[int, ...],
                pred_pos: Tensor) -> Tensor:
        """(1, T) ids and positions, (N,) pred_pos -> (N,) float32 values."""
        hidden = self.backbone(input_ids=input_ids, position_ids=position_ids,
                               **_decoder_kwargs(doc_lens)).last_hidden_state
        h = hidden[0].index_select(0, pred_pos).float()
        return cast(Tensor, self.value_head(h).squeeze(-1).clone())  # no view out of an FSDP2 root (it warns)


def _enable_checkpointing(model: Any) -> None:
    base = unwrap_lm(model)
    with _quiet_peft():
        base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})


def compile_enabled(cfg: TrainConfig) -> bool:
    """--compile / --no-compile, or when unset: on with CUDA, unless accelerate was launched with
    FSDP (compiled blocks under FSDP2 were not measured)."""
    if cfg.compile is not None:
        return cfg.compile
    return torch.cuda.is_available() and os.environ.get("ACCELERATE_USE_FSDP", "").lower() not in ("true", "1")


def compile_blocks(model: Any) -> int:
    """torch.compile the MLP and the RMSNorms of every decoder layer, with dynamic shapes (rows
    vary in length). Attention stays eager: its per-document loop takes Python ints, which
    would make dynamo recompile for every new set of document lengths. Returns how many
    modules were compiled (0 for an architecture without these names)."""
    base = unwrap_lm(model)
    decoder = base.get_decoder() if hasattr(base, "get_decoder") else base
    done = 0
    for layer in getattr(decoder, "layers", []):
        for name in ("mlp", "input_layernorm", "post_attention_layernorm"):
            module = getattr(layer, name, None)
            if isinstance(module, nn.Module):
                module.compile(dynamic=True)
                done += 1
    return done


def build_actor(cfg: TrainConfig, *, dtype: torch.dtype, resume: Path | None) -> Actor:
    """The actor from --model, or from a step_N/ folder when resuming."""
    if resume is not None and not cfg.lora:
        lm = load_causal_lm(str(resume), dtype=dtype, seed=cfg.seed)
    else:
        lm = load_causal_lm(cfg.model, dtype=dtype, seed=cfg.seed)
        if cfg.lora:
            start = resume if resume is not None else Path(cfg.adapter) if cfg.adapter else None
            lm = load_lora(lm, start) if start is not None else add_lora(lm, cfg)
    if cfg.grad_checkpointing:
        _enable_checkpointing(lm)
    if compile_enabled(cfg):
        compile_blocks(lm)
    return Actor(lm, chunk=cfg.logits_chunk)


def build_critic(cfg: TrainConfig, *, dtype: torch.dtype, source: Path | None) -> Critic:
    """The critic: --model's decoder + a zero value head, or one saved by save_critic."""
    if source is not None and not (source / "value_head.safetensors").is_file():
        raise ModelError(f"{source} is not a critic (no value_head.safetensors): pass a critic_N/ or step_N/ folder")
    if source is not None and not cfg.lora and not (source / "config.json").is_file():
        raise ModelError(f"the critic in {source} is a LoRA adapter: train with --lora to use it")
    if source is not None and (source / "config.json").is_file():  # a full critic
        from transformers import AutoModel

        register_attention()
        backbone = AutoModel.from_pretrained(str(source), attn_implementation=ATTN, dtype=dtype)
    else:
        backbone = unwrap_lm(load_causal_lm(cfg.model, dtype=dtype, seed=cfg.seed)).get_decoder()
        if cfg.lora:
            backbone = load_lora(backbone, source) if source is not None else add_lora(backbone, cfg)
    critic = Critic(backbone, int(unwrap_lm(backbone).config.hidden_size))
    if source is not None:
        from safetensors.torch import load_file  # the [train] extra: imported where used

        head = load_file(str(source / "value_head.safetensors"))
        critic.value_head.load_state_dict(head)
    if cfg.grad_checkpointing:
        _enable_checkpointing(backbone)
    if compile_enabled(cfg):
        compile_blocks(backbone)
    return critic


def build_reference(cfg: TrainConfig, *, dtype: torch.dtype) -> Actor:
    """A frozen copy of --model (full fine-tuning; LoRA uses Actor.reference instead)."""
    lm = load_causal_lm(cfg.model, dtype=dtype, seed=cfg.seed)
    lm.requires_grad_(False)
    lm.eval()
    return Actor(lm, chunk=cfg.logits_chunk)


def critic_source(path: Path) -> Path:
    """A critic folder from --critic: critic_N/critic or step_N/critic, or the folder itself."""
    return path / "critic" if (path / "critic").is_dir() else path


# --------------------------------------------------------------------------------- saving


def save_actor(actor: Actor, folder: Path, *, model_spec: str,
               state_dict: dict[str, Tensor] | None = None) -> None:
    """Full weights (config.json + model.safetensors, plus the base model's tokenizer files) or,
    with LoRA, adapter_config.json + adapter_model.safetensors: what vLLM loads."""
    folder.mkdir(parents=True, exist_ok=True)
    with _quiet_peft():
        actor.lm.save_pretrained(str(folder), state_dict=state_dict)
    src = Path(model_spec)
    if src.is_dir():
        for name in TOKENIZER_FILES:
            if (src / name).is_file():
                shutil.copy2(src / name, folder / name)


def save_critic(critic: Critic, folder: Path, *, state_dict: dict[str, Tensor] | None = None) -> None:
    """The backbone as transformers / peft save it, and value_head.safetensors beside it.
    `state_dict`: the whole critic's (gathered under FSDP), else the module's own."""
    folder.mkdir(parents=True, exist_ok=True)
    sd = state_dict if state_dict is not None else critic.state_dict()
    backbone = {k.removeprefix("backbone."): v for k, v in sd.items() if k.startswith("backbone.")}
    head = {k.removeprefix("value_head."): v for k, v in sd.items() if k.startswith("value_head.")}
    with _quiet_peft():
        critic.backbone.save_pretrained(str(folder), state_dict=backbone if state_dict is not None else None)
    from safetensors.torch import save_file

    save_file({k: v.detach().cpu().contiguous() for k, v in head.items()}, str(folder / "value_head.safetensors"))


def fsdp_units(model: nn.Module) -> list[str]:
    """Class names FSDP shards as units of their own: the decoder layers (transformers'
    `_no_split_modules` of each model inside) and the critic's value head."""
    names: list[str] = []
    for module in model.modules():
        for name in getattr(module, "_no_split_modules", None) or []:
            if name not in names:
                names.append(name)
        if isinstance(module, ValueHead) and "ValueHead" not in names:
            names.append("ValueHead")
    return names


def prepare(acc: Any, model: nn.Module, opt: torch.optim.Optimizer | None) -> tuple[Any, Any]:
    """`acc.prepare` one model with its optimizer: DDP, or FSDP when accelerate is configured for it.
    One model per call, as FSDP2 requires; under FSDP the units are `fsdp_units(model)`, whatever
    wrap policy the accelerate config names (a bf16 unit holding the float32 value head fails)."""
    plugin = getattr(acc.state, "fsdp_plugin", None)
    if plugin is not None and "FSDP" in str(acc.distributed_type):
        from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy

        plugin.auto_wrap_policy = transformer_auto_wrap_policy  # prepare() turns it into a partial
        plugin.transformer_cls_names_to_wrap = fsdp_units(model)
    if opt is None:
        return acc.prepare(model), None
    model, opt = acc.prepare(model, opt)
    return model, opt


def trainable(module: nn.Module) -> list[nn.Parameter]:
    return [p for p in module.parameters() if p.requires_grad]


def optimizer(params: list[nn.Parameter], *, lr: float, weight_decay: float) -> torch.optim.Optimizer:
    """AdamW; the fused kernel on CUDA."""
    fused = bool(params) and params[0].device.type == "cuda"
    return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, betas=(0.9, 0.999), eps=1e-8,
                             fused=fused or None)
