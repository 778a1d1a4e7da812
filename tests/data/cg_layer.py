# ruff: noqa
# flake8: noqa
"""A Keras-style layer with custom gradients in methods, like keras/src/layers/core/dense.py."""

from keras.src import backend
from keras.src import ops
from keras.src.layers.layer import Layer


def _check_rank(inputs, rank):
    if len(inputs.shape) != rank:
        raise ValueError(f"expected rank {rank}, got {inputs.shape}")


class QuantizedDense(Layer):
    """Dense layer whose quantized call path defines its own gradient."""

    default_units = 8

    def __init__(self, units=None, activation=None, **kwargs):
        super().__init__(**kwargs)
        self.units = units or self.default_units
        self.activation = activation
        self._kernel = None

    def build(self, input_shape):
        self._kernel = self.add_weight(name="kernel", shape=(input_shape[-1], self.units))
        self.kernel_scale = self.add_weight(name="kernel_scale", shape=(self.units,))
        self.bias = self.add_weight(name="bias", shape=(self.units,))

    @property
    def kernel(self):
        return self._kernel

    def get_config(self):
        return {"units": self.units, "activation": self.activation}

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], self.units)

    def _int8_call(self, inputs):
        _check_rank(inputs, 2)

        @ops.custom_gradient
        def matmul_with_inputs_gradient(inputs, kernel, kernel_scale):
            def grad_fn(*args, upstream=None):
                if upstream is None:
                    (upstream,) = args
                float_kernel = ops.divide(ops.cast(kernel, dtype=self.compute_dtype), kernel_scale)
                inputs_grad = ops.matmul(upstream, ops.transpose(float_kernel))
                return (inputs_grad, None, None)

            x = ops.matmul(inputs, kernel)
            x = ops.cast(x, self.compute_dtype)
            return x, grad_fn

        x = matmul_with_inputs_gradient(inputs, ops.convert_to_tensor(self._kernel),
                                        ops.convert_to_tensor(self.kernel_scale))
        if self.bias is not None:
            x = ops.add(x, self.bias)
        return x

    def _lossy_call(self, inputs):
        @ops.custom_gradient
        def forward(inputs, kernel):
            def grad_fn(upstream):
                return ops.matmul(upstream, ops.transpose(kernel))  # defect: two inputs, one gradient

            return ops.matmul(inputs, kernel), grad_fn

        return forward(inputs, self.kernel)

    def call(self, inputs):
        if backend.backend() == "tensorflow":
            return self._int8_call(inputs)
        return self._lossy_call(inputs)
