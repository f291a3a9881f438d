"""A tinygrad MLP for `python -m tinyc.export` (docs/python.md):

  python -m tinyc.export examples/tinygrad/mlp.py -o mlp.uop -- --rows 64
  build/tinyc run mlp.uop --random-inputs 1 --check

export() returns (outputs, inputs, params); the weights are inputs of the graph, named
after tinygrad's state dict.
"""
import argparse
import sys

from tinygrad import Tensor, nn


class MLP:
    def __init__(self, d, h):
        self.fc1, self.fc2 = nn.Linear(d, h), nn.Linear(h, d)

    def __call__(self, x):
        return self.fc2(self.fc1(x).gelu())


def export():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=8)
    ap.add_argument("--d", type=int, default=16)
    ap.add_argument("--hidden", type=int, default=32)
    args = ap.parse_args(sys.argv[1:])
    model = MLP(args.d, args.hidden)
    params = nn.state.get_state_dict(model)
    Tensor.realize(*params.values())	# weights are buffers, not random-number graphs
    x = Tensor.empty(args.rows, args.d)
    return {"y": model(x)}, {"x": x}, params


if __name__ == "__main__":
    outputs, inputs, params = export()
    print(outputs["y"].numpy())
