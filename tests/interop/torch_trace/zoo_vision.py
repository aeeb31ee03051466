"""Vision and audio models nobody here wrote, one training step each: torchvision's
classification families (a small member of each, small images, 10 classes; some in
channels-last memory or under bfloat16 autocast), LR-ASPP segmentation, and transformers'
ViT, DeiT, Swin, ConvNeXt, BEiT, DINOv2, SegFormer, MobileViT, LeViT, CLIP, Whisper and
wav2vec2 with tiny random configs. ``VISION[name]() -> Training``."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from models import TORCHVISION_MODELS as tv
from training import Training
from zoo_text import OPTIMIZERS, _hf, step_of

CLASSES = 10


def classify(model, optimizer="sgd_nesterov", size=32, batch=2, clip=None, autocast=False,
             channels_last=False, output=lambda out: out):
    x = torch.randn(batch, 3, size, size)
    y = torch.randint(0, CLASSES, (batch,))
    if channels_last:   # NHWC memory: every conv reads and writes permuted strides
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    opt = OPTIMIZERS[optimizer](model.parameters())
    model.train()
    return Training(model, opt, step_of(
        model, opt, lambda: F.cross_entropy(output(model(x)), y), clip, autocast))


def _aux(out):
    """googlenet trains with auxiliary classifiers."""
    return out.logits + 0.3 * sum(a for a in out[1:] if a is not None)


def _vit():
    return tv.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                hidden_dim=32, mlp_dim=64, dropout=0.1, num_classes=CLASSES)


def _swin(block=None):
    extra = {"block": block} if block else {}
    return tv.SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 2],
                              window_size=[4, 4], num_classes=CLASSES, **extra)


def _swin_v2():
    from torchvision.models.swin_transformer import PatchMergingV2, SwinTransformerBlockV2
    return tv.SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2],
                              num_heads=[2, 2], window_size=[4, 4], num_classes=CLASSES,
                              block=SwinTransformerBlockV2, downsample_layer=PatchMergingV2)


def _convnext():
    from torchvision.models.convnext import CNBlockConfig
    return tv.ConvNeXt([CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 1)],
                       stochastic_depth_prob=0.1, num_classes=CLASSES)


def _maxvit():
    return tv.MaxVit(input_size=(32, 32), stem_channels=16, partition_size=2,
                     block_channels=[16, 32], block_layers=[1, 1], head_dim=8,
                     stochastic_depth_prob=0.1, num_classes=CLASSES)


TORCHVISION = {
    "alexnet": lambda: classify(tv.alexnet(num_classes=CLASSES), "sgd_fused", size=64),
    "convnext": lambda: classify(_convnext(), "adamw", clip="norm"),
    "densenet121_memory_efficient": lambda: classify(
        tv.densenet121(num_classes=CLASSES, memory_efficient=True), "sgd_nesterov"),
    "efficientnet_b0": lambda: classify(tv.efficientnet_b0(num_classes=CLASSES), "rmsprop"),
    "googlenet": lambda: classify(tv.googlenet(num_classes=CLASSES, aux_logits=True,
                                               init_weights=True), "sgd_nesterov", size=64,
                                  output=_aux),
    "maxvit": lambda: classify(_maxvit(), "adamw"),
    "mnasnet0_5": lambda: classify(tv.mnasnet0_5(num_classes=CLASSES), "sgd_fused"),
    "mobilenet_v2_autocast": lambda: classify(tv.mobilenet_v2(num_classes=CLASSES),
                                              "sgd_nesterov", autocast=True),
    "mobilenet_v3_small": lambda: classify(tv.mobilenet_v3_small(num_classes=CLASSES),
                                           "rmsprop", clip="value"),
    # its last blocks run at 1x1 pixels, where NCHW and NHWC strides are both valid: see
    # test_model_zoo's test_what_any_dispatch_mode_changes
    "mobilenet_v3_small_channels_last": lambda: classify(
        tv.mobilenet_v3_small(num_classes=CLASSES), "adamw_foreach", channels_last=True),
    "regnet_x_400mf": lambda: classify(tv.regnet_x_400mf(num_classes=CLASSES), "adamw"),
    "regnet_y_400mf_channels_last": lambda: classify(
        tv.regnet_y_400mf(num_classes=CLASSES), "adamw_fused", channels_last=True),
    "resnext50_autocast_channels_last": lambda: classify(
        tv.resnext50_32x4d(num_classes=CLASSES), "sgd_fused", autocast=True,
        channels_last=True),
    "shufflenet_v2_x0_5": lambda: classify(tv.shufflenet_v2_x0_5(num_classes=CLASSES),
                                           "adagrad"),
    "squeezenet1_1": lambda: classify(tv.squeezenet1_1(num_classes=CLASSES), "adam_amsgrad",
                                      size=64),
    "swin": lambda: classify(_swin(), "adamw", clip="norm"),
    "swin_v2": lambda: classify(_swin_v2(), "adamw_foreach"),
    "vit": lambda: classify(_vit(), "adamw", autocast=True),
}


def segment(model, optimizer="adamw"):
    x = torch.randn(2, 3, 32, 32)
    y = torch.randint(0, 3, (2, 32, 32))
    opt = OPTIMIZERS[optimizer](model.parameters())
    model.train()
    return Training(model, opt, step_of(
        model, opt, lambda: F.cross_entropy(model(x)["out"], y), None, False))


SEGMENTATION = {
    "lraspp_mobilenet_v3": lambda: segment(tv.segmentation.lraspp_mobilenet_v3_large(
        weights_backbone=None, num_classes=3)),
}


def hf_image(config_name, model_name, optimizer="adamw", size=32, **config):
    model = _hf(config_name, model_name, num_labels=CLASSES, **config)
    x = torch.randn(2, 3, size, size)
    y = torch.randint(0, CLASSES, (2,))
    opt = OPTIMIZERS[optimizer](model.parameters())
    model.train()
    return Training(model, opt, step_of(model, opt,
                                        lambda: model(pixel_values=x, labels=y).loss))


VIT = dict(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2,
           num_attention_heads=4, intermediate_size=64)


def clip():
    from transformers import CLIPConfig
    cfg = CLIPConfig(text_config=dict(vocab_size=100, hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=2, num_attention_heads=4,
                                      max_position_embeddings=32),
                     vision_config=dict(VIT), projection_dim=16)
    from transformers import CLIPModel
    model = CLIPModel(cfg)
    ids = torch.randint(0, 100, (3, 8))
    pixels = torch.randn(3, 3, 32, 32)
    opt = OPTIMIZERS["adamw_foreach"](model.parameters())
    model.train()
    return Training(model, opt, step_of(model, opt, lambda: model(
        input_ids=ids, pixel_values=pixels, return_loss=True).loss, "norm"))


def whisper():
    model = _hf("WhisperConfig", "WhisperForConditionalGeneration", vocab_size=100,
                num_mel_bins=8, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
                d_model=32, max_source_positions=16, max_target_positions=32,
                pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=0,
                suppress_tokens=[], begin_suppress_tokens=[])
    features = torch.randn(2, 8, 32)
    labels = torch.randint(3, 100, (2, 6))
    opt = OPTIMIZERS["adamw"](model.parameters())
    model.train()
    return Training(model, opt, step_of(model, opt, lambda: model(
        input_features=features, labels=labels).loss, "norm"))


def wav2vec2():
    model = _hf("Wav2Vec2Config", "Wav2Vec2ForCTC", vocab_size=20, hidden_size=32,
                num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3),
                num_conv_pos_embeddings=8, num_conv_pos_embedding_groups=4,
                mask_time_prob=0.2, mask_time_length=2, ctc_loss_reduction="mean",
                pad_token_id=0)
    audio = torch.randn(2, 400)
    labels = torch.randint(1, 20, (2, 5))
    opt = OPTIMIZERS["adam_fused"](model.parameters())
    model.train()
    return Training(model, opt, step_of(model, opt, lambda: model(
        input_values=audio, labels=labels).loss))


HF_VISION_AUDIO = {
    "hf_vit": lambda: hf_image("ViTConfig", "ViTForImageClassification", **VIT),
    "hf_deit": lambda: hf_image("DeiTConfig", "DeiTForImageClassification", "sgd_fused",
                                **VIT),
    "hf_swin": lambda: hf_image("SwinConfig", "SwinForImageClassification", "adamw_fused",
                                image_size=32, patch_size=4, embed_dim=16, depths=[1, 1],
                                num_heads=[2, 2], window_size=4),
    "hf_convnext": lambda: hf_image("ConvNextConfig", "ConvNextForImageClassification",
                                    "nadam", num_stages=2, hidden_sizes=[16, 32], depths=[1, 1],
                                    drop_path_rate=0.1),
    "hf_clip": clip,
    "hf_whisper": whisper,
    "hf_wav2vec2": wav2vec2,
    "hf_beit": lambda: hf_image("BeitConfig", "BeitForImageClassification",
                                use_relative_position_bias=True, **VIT),
    "hf_dinov2": lambda: hf_image("Dinov2Config", "Dinov2ForImageClassification", **VIT),
    "hf_segformer": lambda: hf_image(
        "SegformerConfig", "SegformerForImageClassification", num_encoder_blocks=2,
        depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[16, 32], patch_sizes=[7, 3],
        strides=[4, 2], num_attention_heads=[1, 2], mlp_ratios=[2, 2],
        decoder_hidden_size=32),
    "hf_mobilevit": lambda: hf_image(
        "MobileViTConfig", "MobileViTForImageClassification", image_size=32, patch_size=2,
        hidden_sizes=[16, 24, 32], neck_hidden_sizes=[8, 8, 16, 16, 24, 24, 32],
        num_attention_heads=2),
    "hf_levit": lambda: hf_image(
        "LevitConfig", "LevitForImageClassification", size=64, image_size=64,
        hidden_sizes=[16, 24, 32], num_attention_heads=[1, 2, 2], depths=[1, 1, 1],
        key_dim=[8, 8, 8],
        down_ops=[["Subsample", 8, 1, 4, 2, 2], ["Subsample", 8, 2, 4, 2, 2]]),
}

VISION = {**TORCHVISION, **SEGMENTATION, **HF_VISION_AUDIO}
