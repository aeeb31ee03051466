"""Front ends in the styles of the frameworks the seed articles describe (MegEngine,
TensorFlow, TVM). Each records what its programs do as aliasflow ops over aliasflow memory."""
