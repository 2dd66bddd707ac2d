"""Writes builder.litertlm with Google's LiteRT-LM builder (pip install
litert-lm-builder==0.18.1): the TFLite model sample.tflite (written by
TestWriteSample, `EDGELOAD_WRITE_FIXTURES=1 go test -run TestWriteSample
./loader/litertlm/`), a SentencePiece tokenizer section holding
tokenizer.bin's bytes, and a generic binary section. Run from this folder:
python3 gen_builder.py
"""
from litert_lm_builder import litertlm_builder as b

with open("tokenizer.bin", "wb") as f:
    f.write(b"sentencepiece model bytes for the test")
with open("extra.bin", "wb") as f:
    f.write(bytes(range(256)) * 3)
builder = b.LitertLmFileBuilder()
builder.add_system_metadata(b.Metadata(key="Authors", value="edgeload tests", dtype=b.DType.STRING))
builder.add_tflite_model("sample.tflite", b.TfLiteModelType.PREFILL_DECODE)
builder.add_sentencepiece_tokenizer("tokenizer.bin")
builder.add_generic_binary_data("extra.bin")
with open("builder.litertlm", "wb") as f:
    builder.build(f)
