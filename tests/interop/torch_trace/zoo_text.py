"""transformers' text models with tiny random configs (no downloads), one training step
each: ``TEXT[name]() -> Training`` (decoders of the Llama family, MoE, GPT variants, encoder-
decoders, masked LMs, long-range and reversible attention, state-space and recurrent ones).
Optimizers, clipping, autocast and checkpointing vary from model to model so that the sweep
meets each of them on real code."""
from __future__ import annotations

import os

import torch

import models  # noqa: F401 - torchvision first (see models.TORCHVISION_MODELS)
from training import Training

os.environ.setdefault("HF_HUB_OFFLINE", "1")
VOCAB = 100
BATCH, LENGTH = 2, 12


def _hf(config_name, model_name, **config):
    import transformers
    cfg = getattr(transformers, config_name)(**config)
    return getattr(transformers, model_name)(cfg)


def step_of(model, optimizer, loss_of, clip=None, autocast=False):
    """One step: the loss (under bfloat16 autocast if asked), backward, gradient clipping
    (``"norm"``: by total norm, ``"value"``: elementwise), the optimizer's step."""
    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = loss_of()
        optimizer.zero_grad()
        loss.backward()
        if clip == "norm":
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        elif clip == "value":
            torch.nn.utils.clip_grad_value_(model.parameters(), 0.5)
        optimizer.step()
        return loss.detach()
    return step


def lm(model, optimizer="adamw", labels="same", clip=None, autocast=False, **inputs):
    """A language-model step: ``labels`` "same" (causal LMs shift them inside), "masked"
    (every third position ignored, -100), or "decoder" (a separate target sequence)."""
    ids = torch.randint(3, VOCAB, (BATCH, LENGTH))
    target = ids.clone()
    if labels == "masked":
        target[:, ::3] = -100
    elif labels == "decoder":
        target = torch.randint(3, VOCAB, (BATCH, LENGTH - 4))
    opt = OPTIMIZERS[optimizer](model.parameters())
    model.train()
    return Training(model, opt, step_of(
        model, opt, lambda: model(input_ids=ids, labels=target, **inputs).loss, clip,
        autocast))


OPTIMIZERS = {
    "adamw": lambda p: torch.optim.AdamW(p, lr=1e-3),
    "adamw_foreach": lambda p: torch.optim.AdamW(p, lr=1e-3, foreach=True),
    "adamw_fused": lambda p: torch.optim.AdamW(p, lr=1e-3, fused=True),
    "adam_amsgrad": lambda p: torch.optim.Adam(p, lr=1e-3, amsgrad=True, foreach=True),
    "adam_fused": lambda p: torch.optim.Adam(p, lr=1e-3, fused=True, weight_decay=0.01),
    "sgd_nesterov": lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9, nesterov=True),
    "sgd_fused": lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9, fused=True),
    "rmsprop": lambda p: torch.optim.RMSprop(p, lr=1e-3, momentum=0.5, centered=True,
                                            foreach=True),
    "adagrad": lambda p: torch.optim.Adagrad(p, lr=1e-2, fused=True),
    "nadam": lambda p: torch.optim.NAdam(p, lr=1e-3, decoupled_weight_decay=True,
                                        weight_decay=0.01),
    "radam": lambda p: torch.optim.RAdam(p, lr=1e-3, foreach=True),
    "adamax": lambda p: torch.optim.Adamax(p, lr=1e-3, foreach=True),
    "adadelta": lambda p: torch.optim.Adadelta(p, foreach=False),
    "asgd": lambda p: torch.optim.ASGD(p, lr=1e-3, foreach=True),
    "rprop": lambda p: torch.optim.Rprop(p, lr=1e-3, foreach=True),
}

# the configuration keys the Llama family shares
DECODER = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2, vocab_size=VOCAB,
               max_position_embeddings=64, bos_token_id=0, eos_token_id=0, pad_token_id=0)
ENCODER = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
               num_attention_heads=4, vocab_size=VOCAB, max_position_embeddings=64)


def mistral():
    return lm(_hf("MistralConfig", "MistralForCausalLM", sliding_window=8, **DECODER),
              "adamw_foreach", clip="norm")


def qwen2():
    return lm(_hf("Qwen2Config", "Qwen2ForCausalLM", **DECODER), "adamw_fused")


def qwen2_moe():
    return lm(_hf("Qwen2MoeConfig", "Qwen2MoeForCausalLM", moe_intermediate_size=16,
                  shared_expert_intermediate_size=32, num_experts=4, num_experts_per_tok=2,
                  output_router_logits=True, **DECODER), "adam_amsgrad")


def mixtral():
    return lm(_hf("MixtralConfig", "MixtralForCausalLM", num_local_experts=4,
                  num_experts_per_tok=2, **DECODER), "adamw")


def gemma():
    return lm(_hf("GemmaConfig", "GemmaForCausalLM", head_dim=8, **DECODER), "nadam")


def gemma2():
    return lm(_hf("Gemma2Config", "Gemma2ForCausalLM", head_dim=8, sliding_window=8,
                  **DECODER), "adamw", autocast=True)


def phi():
    cfg = {**DECODER, "num_key_value_heads": 4}
    return lm(_hf("PhiConfig", "PhiForCausalLM", partial_rotary_factor=0.5, **cfg), "radam")


def phi3():
    return lm(_hf("Phi3Config", "Phi3ForCausalLM", **DECODER), "adamw", clip="value")


def llama_checkpointed():
    model = _hf("LlamaConfig", "LlamaForCausalLM", **DECODER)
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return lm(model, "sgd_fused")


def llama_autocast():
    return lm(_hf("LlamaConfig", "LlamaForCausalLM", **DECODER), "adamw_foreach",
              clip="norm", autocast=True)


def gpt_neox():
    cfg = {k: v for k, v in DECODER.items() if k != "num_key_value_heads"}
    return lm(_hf("GPTNeoXConfig", "GPTNeoXForCausalLM", rotary_pct=0.5, **cfg), "adamax")


def falcon():
    return lm(_hf("FalconConfig", "FalconForCausalLM", hidden_size=32, num_hidden_layers=2,
                  num_attention_heads=4, vocab_size=VOCAB, new_decoder_architecture=True,
                  num_kv_heads=2, bos_token_id=0, eos_token_id=0), "rmsprop")


def gpt_neo():
    return lm(_hf("GPTNeoConfig", "GPTNeoForCausalLM", hidden_size=32, num_layers=2,
                  num_heads=4, vocab_size=VOCAB, max_position_embeddings=64,
                  attention_types=[[["global", "local"], 1]], window_size=4,
                  bos_token_id=0, eos_token_id=0), "adamw")


def gptj():
    return lm(_hf("GPTJConfig", "GPTJForCausalLM", n_embd=32, n_layer=2, n_head=4,
                  rotary_dim=4, vocab_size=VOCAB, n_positions=64, bos_token_id=0,
                  eos_token_id=0), "adagrad")


def bloom():
    return lm(_hf("BloomConfig", "BloomForCausalLM", hidden_size=32, n_layer=2, n_head=4,
                  vocab_size=VOCAB, bos_token_id=0, eos_token_id=0), "adamw")


def mpt():
    return lm(_hf("MptConfig", "MptForCausalLM", d_model=32, n_layers=2, n_heads=4,
                  expansion_ratio=2, max_seq_len=64, vocab_size=VOCAB), "adamw")


def opt():
    return lm(_hf("OPTConfig", "OPTForCausalLM", hidden_size=32, num_hidden_layers=2,
                  ffn_dim=64, num_attention_heads=4, max_position_embeddings=64,
                  word_embed_proj_dim=32, vocab_size=VOCAB, pad_token_id=1,
                  bos_token_id=0, eos_token_id=2), "sgd_nesterov")


def t5():
    return lm(_hf("T5Config", "T5ForConditionalGeneration", vocab_size=VOCAB, d_model=32,
                  d_kv=8, d_ff=64, num_layers=2, num_heads=4, decoder_start_token_id=0,
                  pad_token_id=0, eos_token_id=1), "adam_fused", labels="decoder")


def bart():
    return lm(_hf("BartConfig", "BartForConditionalGeneration", vocab_size=VOCAB,
                  d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                  decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
                  max_position_embeddings=64, pad_token_id=1, bos_token_id=0,
                  eos_token_id=2, decoder_start_token_id=2), "adamw", labels="decoder",
              clip="norm")


def roberta():
    return lm(_hf("RobertaConfig", "RobertaForMaskedLM", pad_token_id=1,
                  **{**ENCODER, "max_position_embeddings": 66}), "adadelta", labels="masked")


def distilbert():
    return lm(_hf("DistilBertConfig", "DistilBertForMaskedLM", vocab_size=VOCAB, dim=32,
                  n_layers=2, n_heads=4, hidden_dim=64, max_position_embeddings=64),
              "asgd", labels="masked")


def albert():
    return lm(_hf("AlbertConfig", "AlbertForMaskedLM", embedding_size=16, **ENCODER),
              "rprop", labels="masked")


def electra():
    return lm(_hf("ElectraConfig", "ElectraForMaskedLM", embedding_size=16, **ENCODER),
              "adamw", labels="masked")


def deberta_v2():
    return lm(_hf("DebertaV2Config", "DebertaV2ForMaskedLM", relative_attention=True,
                  position_buckets=8, pos_att_type=["p2c", "c2p"], **ENCODER), "adamw",
              labels="masked")


def mamba():
    return lm(_hf("MambaConfig", "MambaForCausalLM", hidden_size=32, state_size=4,
                  num_hidden_layers=2, vocab_size=VOCAB, expand=2, conv_kernel=4,
                  bos_token_id=0, eos_token_id=0, pad_token_id=0), "adamw")


TEXT = {f.__name__: f for f in [
    mistral, qwen2, qwen2_moe, mixtral, gemma, gemma2, phi, phi3, llama_checkpointed,
    llama_autocast, gpt_neox, falcon, gpt_neo, gptj, bloom, mpt, opt, t5, bart, roberta,
    distilbert, albert, electra, deberta_v2, mamba]}


# ---- more architectures: long-range attention, reversible layers, recurrences, MoE --------
NO_KV = {k: v for k, v in DECODER.items() if k != "num_key_value_heads"}


def _masked(config, model, **extra):
    return lambda: lm(_hf(config, model, **extra), "adamw", labels="masked")


def _causal(config, model, **extra):
    return lambda: lm(_hf(config, model, **extra), "adamw")


MORE_TEXT = {
    # sliding-window attention through as_strided chunks
    "longformer": _masked("LongformerConfig", "LongformerForMaskedLM", attention_window=4,
                          pad_token_id=1, **{**ENCODER, "max_position_embeddings": 66}),
    "bigbird": _masked("BigBirdConfig", "BigBirdForMaskedLM", block_size=2,
                       num_random_blocks=1, **ENCODER),
    # reversible layers (backward recomputes activations) and LSH attention; seeded hashing
    # and no dropout, or two untraced runs already differ (it draws seeds by torch.seed())
    "reformer": _causal("ReformerConfig", "ReformerModelWithLMHead", hidden_size=32,
                        num_attention_heads=2, attention_head_size=8, feed_forward_size=32,
                        vocab_size=VOCAB, attn_layers=["local", "lsh", "local", "lsh"],
                        axial_pos_embds=False, max_position_embeddings=64,
                        local_attn_chunk_length=4, lsh_attn_chunk_length=4, num_buckets=2,
                        is_decoder=True, pad_token_id=0, eos_token_id=0, hash_seed=0,
                        hidden_dropout_prob=0.0, local_attention_probs_dropout_prob=0.0,
                        lsh_attention_probs_dropout_prob=0.0),
    "xlnet": _causal("XLNetConfig", "XLNetLMHeadModel", vocab_size=VOCAB, d_model=32,
                     n_layer=2, n_head=4, d_inner=64, pad_token_id=0, bos_token_id=1,
                     eos_token_id=2),
    "funnel": _masked("FunnelConfig", "FunnelForMaskedLM", vocab_size=VOCAB,
                      block_sizes=[1, 1], d_model=32, n_head=4, d_head=8, d_inner=64),
    "mobilebert": _masked("MobileBertConfig", "MobileBertForMaskedLM", embedding_size=16,
                          intra_bottleneck_size=16, true_hidden_size=16,
                          num_feedforward_networks=2, **ENCODER),
    "fnet": _masked("FNetConfig", "FNetForMaskedLM", use_tpu_fourier_optimizations=False,
                    **{k: v for k, v in ENCODER.items() if k != "num_attention_heads"}),
    "convbert": _masked("ConvBertConfig", "ConvBertForMaskedLM", embedding_size=16,
                        **ENCODER),
    "deberta": _masked("DebertaConfig", "DebertaForMaskedLM", relative_attention=True,
                       pos_att_type=["p2c", "c2p"], **ENCODER),
    "gpt_bigcode": _causal("GPTBigCodeConfig", "GPTBigCodeForCausalLM", n_embd=32,
                           n_layer=2, n_head=4, vocab_size=VOCAB, n_positions=64,
                           multi_query=True, bos_token_id=0, eos_token_id=0),
    "codegen": _causal("CodeGenConfig", "CodeGenForCausalLM", n_embd=32, n_layer=2,
                       n_head=4, rotary_dim=4, vocab_size=VOCAB, n_positions=64, n_ctx=64,
                       bos_token_id=0, eos_token_id=0),
    "starcoder2": _causal("Starcoder2Config", "Starcoder2ForCausalLM", **DECODER),
    "olmo": _causal("OlmoConfig", "OlmoForCausalLM", **DECODER),
    "stablelm": _causal("StableLmConfig", "StableLmForCausalLM", **DECODER),
    "cohere": _causal("CohereConfig", "CohereForCausalLM", **DECODER),
    "persimmon": _causal("PersimmonConfig", "PersimmonForCausalLM", **NO_KV),
    "rwkv": _causal("RwkvConfig", "RwkvForCausalLM", vocab_size=VOCAB, hidden_size=32,
                    num_hidden_layers=2, attention_hidden_size=32, intermediate_size=64,
                    context_length=64),
    "recurrent_gemma": _causal("RecurrentGemmaConfig", "RecurrentGemmaForCausalLM",
                               num_hidden_layers=3, vocab_size=VOCAB, hidden_size=32,
                               intermediate_size=64, num_attention_heads=4,
                               num_key_value_heads=2, lru_width=32, attention_window_size=8,
                               conv1d_width=4, head_dim=8, pad_token_id=0, bos_token_id=0,
                               eos_token_id=0,
                               block_types=["recurrent", "recurrent", "attention"]),
    "jamba": _causal("JambaConfig", "JambaForCausalLM", num_experts=2, num_experts_per_tok=1,
                     expert_layer_period=2, expert_layer_offset=1, attn_layer_period=2,
                     attn_layer_offset=1, mamba_d_state=4, mamba_d_conv=4, mamba_expand=2,
                     **DECODER),
}
TEXT.update(MORE_TEXT)
