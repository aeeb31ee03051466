"""Still more silent wrong results from PyTorch's issue tracker, each flagged once at its line;
the same program written without the aliasing gives no finding (the reports whose eager
result is right are in ``test_real_bugs_quiet.py``).

The same layout as ``test_real_bugs_more.py``: each program is written to a file and run
unmodified under ``af.trace()``; ``wrong`` cases (and the ``stale-view`` one whose stale read
changes a result) have an oracle below computed without the tracer, the op on the program's
own aliased tensors against the same op on copies; ``hazard`` cases are refused by torch 2.13
(the oracle checks it raises) or computed right this time by its kernel (the oracle checks
the value equals copy semantics).
"""
import copy
import warnings

import pytest

torch = pytest.importorskip("torch")

import aliasflow as af  # noqa: E402,F401
from bug_programs import run_case  # noqa: E402

# (issue, program, [(severity, kind, line, names)], twin: the program without the aliasing)
CASES = [
    # a 0-dim view of the tensor it is subtracted from (the .item() form is the fix)
    ("pytorch#7484", """
        import torch
        a = torch.Tensor([1, 2, 3, 4, 5])
        try:
            a -= a[0]
        except RuntimeError:
            pass
        """, [("hazard", "in-op-overlap", 4, ["a", "a[0]"])], """
        import torch
        a = torch.Tensor([1, 2, 3, 4, 5])
        a -= a[0].item()
        """),
    # meshgrid's outputs are expanded views: the write through repeated indices is refused
    ("pytorch#45964", """
        import torch
        T, B = 8, 17
        ts, bs = torch.meshgrid(torch.arange(T), torch.arange(B), indexing="ij")
        ts_inv = ts.flip(0)
        try:
            ts[ts_inv, bs] = ts
        except RuntimeError:
            pass
        """, [("hazard", "self-overlap-write", 6, ["ts"])], """
        import torch
        T, B = 8, 17
        ts, bs = torch.meshgrid(torch.arange(T), torch.arange(B), indexing="ij")
        ts_inv = ts.flip(0)
        ts = ts.clone()
        ts[ts_inv, bs] = ts.clone()
        """),
    ("pytorch#132031 (cross out= its input)", """
        import torch
        import warnings
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        a = torch.randn(3, 4)
        b = torch.randn(3, 4)
        try:
            torch.cross(a, b, out=a)
        except RuntimeError:
            pass
        """, [("hazard", "in-op-overlap", 8, ["a"])], """
        import torch
        import warnings
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        a = torch.randn(3, 4)
        b = torch.randn(3, 4)
        a = torch.cross(a, b)
        """),
    # the "in-place cumsum" the feature request asks for, written with out= its input
    ("pytorch#47193 (cumsum out= its input)", """
        import torch
        x = torch.tensor([1., 2., 3., 4., 5.])
        torch.cumsum(x, dim=0, out=x)
        """, [("hazard", "in-op-overlap", 3, ["x"])], """
        import torch
        x = torch.tensor([1., 2., 3., 4., 5.])
        x = torch.cumsum(x, dim=0)
        """),
    # the original shift report, whole, with the (deprecated, still there) torch.range: its
    # clone() form and NumPy's (which copies an overlapping source) are right
    ("pytorch#906", """
        import torch
        t = torch.range(1, 10)
        try:
            t[1:] = t[:-1]
        except RuntimeError:
            pass
        t = torch.range(1, 10)
        t[1:] = t[:-1].clone()
        t = torch.range(1, 10).numpy()
        t[1:] = t[:-1]
        """, [("hazard", "in-op-overlap", 4, ["t[1:]", "t[:-1]"])], """
        import torch
        t = torch.range(1, 10)
        t[1:] = t[:-1].clone()
        t = torch.range(1, 10).numpy()
        t[1:] = t[:-1]
        """),
    # reported against torch.compile; eager adds twice to the element the windows share
    ("pytorch#174371 (as_strided windows add_)", """
        import torch
        def foo(a):
            x = a.clone()
            y = x.as_strided((2, 2), (1, 1), 0)
            y.add_(1.0)
            return y
        torch.manual_seed(0)
        a = torch.randn([2, 2, 10])
        res1 = foo(a)
        """, [("wrong", "self-overlap-write", 5, ["y"])], """
        import torch
        def foo(a):
            x = a.clone()
            y = x.as_strided((2, 2), (1, 1), 0).clone()
            y.add_(1.0)
            return y
        torch.manual_seed(0)
        a = torch.randn([2, 2, 10])
        res1 = foo(a)
        """),
    ("pytorch#10756", """
        import torch
        example_batch = torch.Tensor([
            [[1, 2, 0, 0],
             [2, 1, 3, 0],
             [2, 1, 3, 0]]
        ])
        mask = (example_batch == 0)
        index_filled = torch.arange(1, example_batch.size(-1) + 1).expand_as(example_batch)
        masked = index_filled.masked_fill_(mask, 0)
        """, [("wrong", "self-overlap-write", 9, ["index_filled"])], """
        import torch
        example_batch = torch.Tensor([
            [[1, 2, 0, 0],
             [2, 1, 3, 0],
             [2, 1, 3, 0]]
        ])
        mask = (example_batch == 0)
        index_filled = torch.arange(1, example_batch.size(-1) + 1).expand_as(example_batch)
        masked = index_filled.masked_fill(mask, 0)
        """),
    # mul_ is refused; masked_fill_ runs, and filling zeros with zeros comes out right
    ("pytorch#22118", """
        import torch
        a = torch.zeros(2)
        b = a.expand(2, 2)
        try:
            b *= 2
        except RuntimeError:
            pass
        mask = torch.ByteTensor([[0, 1], [1, 0]]).bool()
        b.masked_fill_(mask, 0)
        """, [("hazard", "self-overlap-write", 5, ["b"]),
              ("hazard", "self-overlap-write", 9, ["b"])], """
        import torch
        a = torch.zeros(2)
        b = a.expand(2, 2).clone()
        b *= 2
        mask = torch.ByteTensor([[0, 1], [1, 0]]).bool()
        b.masked_fill_(mask, 0)
        """),
    # overlapping unfold windows made non-negative twice: abs_ is idempotent, so eager comes
    # out right (the report is torch.compile's failure)
    ("pytorch#183888 (unfold windows abs_)", """
        import torch
        def f(x):
            y = torch.add(x, x)
            z = y.unfold(1, 4, 2)
            return z.abs_()
        x = torch.linspace(-3, 3, 7).reshape(1, 7)
        eager_out = f(x.clone())
        """, [("hazard", "self-overlap-write", 5, ["z"])], """
        import torch
        def f(x):
            y = torch.add(x, x)
            z = y.unfold(1, 4, 2).clone()
            return z.abs_()
        x = torch.linspace(-3, 3, 7).reshape(1, 7)
        eager_out = f(x.clone())
        """),
    # the report's second form (its fill_ form writes one value everywhere: quiet); the mask
    # read from the expanded view agrees across its repeats, and torch only warns
    ("pytorch#197448 (masked_fill_ of an expanded view)", """
        import torch
        import torch.nn as nn
        import warnings
        warnings.simplefilter("ignore")
        class Model(nn.Module):
            def forward(self, base):
                v = base.expand(3, -1)
                v.masked_fill_(v >= 0, 2.0)
                return base
        x1 = torch.tensor([-1.0, -0.5, 0.0, 0.5])
        out1 = Model()(x1)
        """, [("hazard", "self-overlap-write", 8, ["v"])], """
        import torch
        import torch.nn as nn
        class Model(nn.Module):
            def forward(self, base):
                base.masked_fill_(base >= 0, 2.0)
                return base
        x1 = torch.tensor([-1.0, -0.5, 0.0, 0.5])
        out1 = Model()(x1)
        """),
    # reported against other kernels (tt-metal, onnxruntime#29790, where graph passes merge
    # equal initializers); torch's CPU kernel also updates the running statistics before it
    # normalizes with weight and bias: its output, a fresh tensor, comes out wrong
    ("tt-metal#41127 (batch_norm's running statistics passed as its bias and weight)", """
        import torch
        import torch.nn.functional as F
        torch.manual_seed(0)
        x = torch.randn(8, 4)
        w = torch.rand(4) + 0.5
        b = torch.randn(4)
        out = F.batch_norm(x, b, w, w, b, training=True, momentum=0.5)
        """, [("wrong", "in-op-overlap", 7, ["b"]), ("wrong", "in-op-overlap", 7, ["w"])], """
        import torch
        import torch.nn.functional as F
        torch.manual_seed(0)
        x = torch.randn(8, 4)
        w = torch.rand(4) + 0.5
        b = torch.randn(4)
        out = F.batch_norm(x, b.clone(), w.clone(), w, b, training=True, momentum=0.5)
        """),
    # index 1 given twice: the value that stays depends on the kernel (CPU keeps the last,
    # CUDA the first), in a module's forward
    ("pytorch#114085 (scatter with a repeated index)", """
        import torch
        import torch.nn as nn
        class PreprocessAndCalculateModel(nn.Module):
            def __init__(self):
                super().__init__()
            def forward(self, x, y, z):
                out = torch.Tensor.scatter(x, 0, y, z)
                return out
        real_inputs = torch.tensor([1, 2, 3, 4, 5, 6, 7])
        real_inputs2 = torch.tensor([0, 1, 1, 2])
        real_inputs3 = torch.tensor([12, 14, 16, 18, 20])
        model = PreprocessAndCalculateModel()
        output_cpu = model(real_inputs, real_inputs2, real_inputs3)
        """, [("wrong", "duplicate-index", 7, ["out"])], """
        import torch
        import torch.nn as nn
        class PreprocessAndCalculateModel(nn.Module):
            def __init__(self):
                super().__init__()
            def forward(self, x, y, z):
                out = torch.Tensor.scatter(x, 0, y, z)
                return out
        real_inputs = torch.tensor([1, 2, 3, 4, 5, 6, 7])
        real_inputs2 = torch.tensor([0, 1, 3, 2])
        real_inputs3 = torch.tensor([12, 14, 16, 18, 20])
        model = PreprocessAndCalculateModel()
        output_cpu = model(real_inputs, real_inputs2, real_inputs3)
        """),
    # the CPU result keeps the last write to the repeated column, CUDA's raced
    ("pytorch#2038 (a column written five times by advanced indexing)", """
        import torch
        torch.manual_seed(0)
        ref = torch.arange(0, 20).view(4, 5).float()
        indexer = [slice(None), [1 for i in range(5)]]
        src = torch.randperm(ref[indexer].numel()).view(ref[indexer].size()).float()
        cpu_ans = ref.clone()
        cpu_ans[indexer] = src
        """, [("wrong", "duplicate-index", 7, ["cpu_ans"])], """
        import torch
        torch.manual_seed(0)
        ref = torch.arange(0, 20).view(4, 5).float()
        indexer = [slice(None), [i for i in range(5)]]
        src = torch.randperm(ref[indexer].numel()).view(ref[indexer].size()).float()
        cpu_ans = ref.clone()
        cpu_ans[indexer] = src
        """),
    ("pytorch#133204 (scatter_ with an index given three times)", """
        import torch
        input = torch.tensor([1, 2, 3, 4, 5, 6, 7, 8, 9])
        index = torch.tensor([0, 1, 1, 1, 2])
        src = torch.tensor([11, 12, 13, 14, 15])
        input.scatter_(0, index, src)
        """, [("wrong", "duplicate-index", 5, ["input"])], """
        import torch
        input = torch.tensor([1, 2, 3, 4, 5, 6, 7, 8, 9])
        index = torch.tensor([0, 1, 3, 4, 2])
        src = torch.tensor([11, 12, 13, 14, 15])
        input.scatter_(0, index, src)
        """),
    ("pytorch#37130 (scatter_ with random indices)", """
        import torch
        torch.manual_seed(0)
        input = torch.zeros(8, 3, 7, 10, dtype=torch.float)
        src = torch.randn(8, 3, 7, 10, dtype=torch.float)
        index = torch.randint(0, 3, [8, 3, 7, 10])
        dim = 1
        input.scatter_(dim, index, src)
        """, [("wrong", "duplicate-index", 7, ["input"])], """
        import torch
        torch.manual_seed(0)
        input = torch.zeros(8, 3, 7, 10, dtype=torch.float)
        src = torch.randn(8, 3, 7, 10, dtype=torch.float)
        index = torch.arange(3).view(1, 3, 1, 1).flip(1).expand(8, 3, 7, 10)
        dim = 1
        input.scatter_(dim, index, src)
        """),
    # a one-hot with masked-out labels sent to column 0 with value 0: whether row 0 keeps its
    # 1 depends on which write lands last (the accumulating form is the fix)
    ("pytorch#131740 (one-hot by scatter_ with masked labels)", """
        import torch
        y = torch.tensor([[0, -1], [0, -1], [1, -1], [-1, -1], [0, 1]])
        one_hot = torch.zeros(5, 3, device=y.device, dtype=torch.float)
        valid_mask = y >= 0
        one_hot.scatter_(1, y * valid_mask, valid_mask.float())
        """, [("wrong", "duplicate-index", 5, ["one_hot"])], """
        import torch
        y = torch.tensor([[0, -1], [0, -1], [1, -1], [-1, -1], [0, 1]])
        one_hot = torch.zeros(5, 3, device=y.device, dtype=torch.float)
        valid_mask = y >= 0
        one_hot.scatter_add_(1, y * valid_mask, valid_mask.float())
        """),
    # only the last row of y lands in z (and autograd's gradient sends ones to all of them)
    ("pytorch#473 (index_copy with one index five times)", """
        import torch
        from torch.autograd import *
        x = Variable(torch.zeros(5, 5), requires_grad=True)
        y = Variable(torch.range(1, 25).view(5, 5), requires_grad=True)
        idx = Variable(torch.LongTensor([0, 0, 0, 0, 0]))
        z = x.index_copy(0, idx, y)
        z.backward(torch.ones(5, 5))
        """, [("wrong", "duplicate-index", 6, ["z"])], """
        import torch
        from torch.autograd import *
        x = Variable(torch.zeros(5, 5), requires_grad=True)
        y = Variable(torch.range(1, 25).view(5, 5), requires_grad=True)
        idx = Variable(torch.LongTensor([4, 3, 2, 1, 0]))
        z = x.index_copy(0, idx, y)
        z.backward(torch.ones(5, 5))
        """),
    # the report loads its token ids from a file; any ids that repeat do it (summing token
    # embeddings per id with +=: each repeated id gets one of its tokens)
    ("pytorch#96806 (summing rows per id with += and repeated ids)", """
        import torch
        torch.manual_seed(0)
        sumtokens = torch.zeros(30523, 256)
        tokenids = torch.randint(0, 100, (472,))
        tindex = torch.arange(0, 472)
        tokens = torch.randn(472, 256)
        sumtokens[tokenids] += tokens[tindex]
        """, [("wrong", "duplicate-index", 7, ["sumtokens"])], """
        import torch
        torch.manual_seed(0)
        sumtokens = torch.zeros(30523, 256)
        tokenids = torch.randint(0, 100, (472,))
        tindex = torch.arange(0, 472)
        tokens = torch.randn(472, 256)
        sumtokens.index_add_(0, tokenids, tokens[tindex])
        """),
    # nn.RNN's docstring "equivalent" forward, as the PR fixing it quotes it: each step
    # appends a view of the hidden-state buffer the next step overwrites, so the stacked
    # outputs all hold the last state
    ("pytorch#142303 (nn.RNN's docstring forward appends views of its state buffer)", """
        import torch
        batch_first = False
        num_layers = 1
        hidden_size = 5
        input_size = 2
        rnn = torch.nn.RNN(input_size=input_size, hidden_size=hidden_size,
                           num_layers=num_layers)
        weight_ih = [rnn.weight_ih_l0.data]
        bias_ih = [rnn.bias_ih_l0.data]
        weight_hh = [rnn.weight_hh_l0.data]
        bias_hh = [rnn.bias_hh_l0.data]
        def forward(x, h_0=None):
            if batch_first:
                x = x.transpose(0, 1)
            seq_len, batch_size, _ = x.size()
            if h_0 is None:
                h_0 = torch.zeros(num_layers, batch_size, hidden_size)
            h_t_minus_1 = h_0
            h_t = h_0
            output = []
            for t in range(seq_len):
                for layer in range(num_layers):
                    h_t[layer] = torch.tanh(
                        x[t] @ weight_ih[layer].T
                        + bias_ih[layer]
                        + h_t_minus_1[layer] @ weight_hh[layer].T
                        + bias_hh[layer]
                    )
                output.append(h_t[-1])
                h_t_minus_1 = h_t
            output = torch.stack(output)
            if batch_first:
                output = output.transpose(0, 1)
            return output, h_t
        torch.manual_seed(0)
        x = torch.randn(4, 3, input_size)
        out, h = forward(x)
        """, [("stale-view", "RAW", 31, ["output[0]", "output[1]", "output[2]"])],
     """
        import torch
        batch_first = False
        num_layers = 1
        hidden_size = 5
        input_size = 2
        rnn = torch.nn.RNN(input_size=input_size, hidden_size=hidden_size,
                           num_layers=num_layers)
        weight_ih = [rnn.weight_ih_l0.data]
        bias_ih = [rnn.bias_ih_l0.data]
        weight_hh = [rnn.weight_hh_l0.data]
        bias_hh = [rnn.bias_hh_l0.data]
        def forward(x, h_0=None):
            if batch_first:
                x = x.transpose(0, 1)
            seq_len, batch_size, _ = x.size()
            if h_0 is None:
                h_0 = torch.zeros(num_layers, batch_size, hidden_size)
            h_t_minus_1 = h_0
            h_t = h_0
            output = []
            for t in range(seq_len):
                for layer in range(num_layers):
                    h_t[layer] = torch.tanh(
                        x[t] @ weight_ih[layer].T
                        + bias_ih[layer]
                        + h_t_minus_1[layer] @ weight_hh[layer].T
                        + bias_hh[layer]
                    )
                output.append(h_t[-1].clone())
                h_t_minus_1 = h_t
            output = torch.stack(output)
            if batch_first:
                output = output.transpose(0, 1)
            return output, h_t
        torch.manual_seed(0)
        x = torch.randn(4, 3, input_size)
        out, h = forward(x)
        """),
    # (one finding per parameter; their names come from the live model, which may be gone by
    # the time the findings are read, so they are not compared)
    # state_dict() hands out detached views of the parameters: the "best" state kept while
    # training goes on is the last one, and loading it back changes nothing (the tutorials'
    # deepcopy warning; the request for state_dict(copy=True))
    ("pytorch#34765 (best state_dict kept by reference)", """
        import torch
        torch.manual_seed(0)
        model = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=1.5)
        x = torch.randn(8, 2)
        y = torch.randn(8, 1)
        best_loss, best_state = float("inf"), None
        for step in range(6):
            loss = ((model(x) - y) ** 2).mean()
            if loss.item() < best_loss:
                best_loss, best_state = loss.item(), model.state_dict()
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.load_state_dict(best_state)
        """, [("stale-view", "RAW", 15, []), ("stale-view", "RAW", 15, [])], """
        import torch
        torch.manual_seed(0)
        model = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=1.5)
        x = torch.randn(8, 2)
        y = torch.randn(8, 1)
        best_loss, best_state = float("inf"), None
        for step in range(6):
            loss = ((model(x) - y) ** 2).mean()
            if loss.item() < best_loss:
                best_loss = loss.item()
                best_state = {k: v.clone() for k, v in model.state_dict().items()}
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.load_state_dict(best_state)
        """),
]


def _line(f):
    return int(f.lines[0].rsplit(":", 1)[1])


@pytest.mark.parametrize("issue,code,expected,twin", CASES, ids=[c[0] for c in CASES])
def test_flagged_once_at_its_line(tmp_path, issue, code, expected, twin):
    tr, path = run_case(tmp_path, code)
    found = tr.findings()
    assert len(found) == len(expected), [f.describe() for f in found]
    got = [(f.severity, f.kind, _line(f), list(f.names[:len(names)]))
           for f, (_, _, _, names) in zip(found, expected)]
    assert got == expected
    for f in found:
        assert f.lines[0].startswith(str(path)) and f.hint
        if f.severity == "wrong":
            assert f.differs > 0 and f.example is not None


@pytest.mark.parametrize("issue,code,expected,twin", CASES, ids=[c[0] for c in CASES])
def test_the_same_program_without_aliasing_has_no_finding(tmp_path, issue, code, expected,
                                                          twin):
    tr, _ = run_case(tmp_path, twin, "twin.py")
    assert tr.findings() == [], [f.describe() for f in tr.findings()]


# ---- oracles, without the tracer -------------------------------------------------------
# wrong: (got, expected) = the op on the program's aliased tensors, and on copies
WRONG = {}
# hazard: a callable that torch refuses (RuntimeError), or (got, expected) that agree
HAZARD = {}


def oracle(table, issue):
    def register(f):
        table[issue] = f
        return f
    return register


def _refused(f):
    def check():
        with pytest.raises(RuntimeError, match="unsupported operation|single memory location"):
            f()
    return check


@oracle(WRONG, "pytorch#174371 (as_strided windows add_)")
def _():
    x = torch.randn(2, 2, 10)
    y = x.as_strided((2, 2), (1, 1), 0)
    expected = y.clone().add_(1.0)
    return y.add_(1.0), expected      # the element both windows hold got 1 twice


@oracle(WRONG, "pytorch#10756")
def _():
    example_batch = torch.Tensor([[[1, 2, 0, 0], [2, 1, 3, 0], [2, 1, 3, 0]]])
    mask = example_batch == 0
    index_filled = torch.arange(1, 5).expand_as(example_batch)
    expected = index_filled.masked_fill(mask, 0)
    return index_filled.masked_fill_(mask, 0), expected


@oracle(WRONG, "tt-metal#41127 (batch_norm's running statistics passed as its bias and "
               "weight)")
def _():
    x, w, b = torch.randn(8, 4), torch.rand(4) + 0.5, torch.randn(4)
    expected = torch.nn.functional.batch_norm(x, b.clone(), w.clone(), w.clone(), b.clone(),
                                              training=True, momentum=0.5)
    return torch.nn.functional.batch_norm(x, b, w, w, b, training=True, momentum=0.5), expected


@oracle(WRONG, "pytorch#114085 (scatter with a repeated index)")
def _():
    # each index written once, in order: the first write of index 1 and the last give
    # different results, so the one that stays is the kernel's choice
    x, y, z = torch.tensor([1, 2, 3, 4, 5, 6, 7]), torch.tensor([0, 1, 1, 2]), \
        torch.tensor([12, 14, 16, 18, 20])
    orders = []
    for order in (range(4), reversed(range(4))):
        expected = x.clone()
        for j in order:
            expected[y[j]] = z[j]
        orders.append(expected)
    assert not torch.equal(*orders)
    got = torch.Tensor.scatter(x, 0, y, z)
    return got, orders[0] if not torch.equal(got, orders[0]) else orders[1]


def _either_order(base, writes):
    """``base`` with ``writes`` (``(index, value)`` pairs) applied one by one, in order and
    in reverse order: two results when the order matters."""
    out = []
    for seq in (writes, writes[::-1]):
        t = base.clone()
        for index, value in seq:
            t[index] = value
        out.append(t)
    assert not torch.equal(*out)     # the answer depends on the order of the writes
    return out


def _scatter_writes(dim, index, src):
    """The ``(index, value)`` writes of ``scatter_(dim, index, src)``, in index order."""
    positions = torch.cartesian_prod(*[torch.arange(n) for n in index.shape])
    return [(tuple(index[tuple(i)].item() if d == dim else c for d, c in enumerate(i)),
             src[tuple(i)]) for i in positions.reshape(-1, index.dim()).tolist()]


def _kernel_order(got, orders):
    """The order the kernel did not take (``got`` equals one of ``orders``, or neither)."""
    return orders[0] if not torch.equal(got, orders[0]) else orders[1]


@oracle(WRONG, "pytorch#2038 (a column written five times by advanced indexing)")
def _():
    torch.manual_seed(0)
    ref = torch.arange(0, 20).view(4, 5).float()
    src = torch.randperm(20).view(4, 5).float()
    orders = _either_order(ref, [((slice(None), 1), src[:, j]) for j in range(5)])
    got = ref.clone()
    got[[slice(None), [1] * 5]] = src
    return got, _kernel_order(got, orders)


@oracle(WRONG, "pytorch#133204 (scatter_ with an index given three times)")
def _():
    index, src = torch.tensor([0, 1, 1, 1, 2]), torch.tensor([11, 12, 13, 14, 15])
    base = torch.tensor([1, 2, 3, 4, 5, 6, 7, 8, 9])
    orders = _either_order(base, _scatter_writes(0, index, src))
    got = base.clone().scatter_(0, index, src)
    return got, _kernel_order(got, orders)


@oracle(WRONG, "pytorch#37130 (scatter_ with random indices)")
def _():
    torch.manual_seed(0)
    src = torch.randn(8, 3, 7, 10)
    index = torch.randint(0, 3, [8, 3, 7, 10])
    base = torch.zeros(8, 3, 7, 10)
    orders = _either_order(base, _scatter_writes(1, index, src))
    got = base.clone().scatter_(1, index, src)
    return got, _kernel_order(got, orders)


@oracle(WRONG, "pytorch#131740 (one-hot by scatter_ with masked labels)")
def _():
    y = torch.tensor([[0, -1], [0, -1], [1, -1], [-1, -1], [0, 1]])
    valid = y >= 0
    base = torch.zeros(5, 3)
    orders = _either_order(base, _scatter_writes(1, y * valid, valid.float()))
    got = base.clone().scatter_(1, y * valid, valid.float())
    return got, _kernel_order(got, orders)


@oracle(WRONG, "pytorch#473 (index_copy with one index five times)")
def _():
    x, y = torch.zeros(5, 5), torch.arange(1., 26.).view(5, 5)
    orders = _either_order(x, [(0, y[k]) for k in range(5)])
    got = x.index_copy(0, torch.zeros(5, dtype=torch.long), y)
    return got, _kernel_order(got, orders)


@oracle(WRONG, "pytorch#96806 (summing rows per id with += and repeated ids)")
def _():
    torch.manual_seed(0)
    tokenids = torch.randint(0, 100, (472,))
    tokens = torch.randn(472, 256)
    got = torch.zeros(200, 256)
    expected = _one_by_one(got, tokenids, tokens)
    got[tokenids] += tokens
    return got, expected


def _one_by_one(target, index, values):
    """``target[i] += v`` for each index in turn: what ``target[index] += values`` means."""
    out = target.clone()
    for i, v in zip(index.tolist(), values):
        out[i] += v
    return out


@oracle(WRONG, "pytorch#142303 (nn.RNN's docstring forward appends views of its state "
               "buffer)")
def _():
    torch.manual_seed(0)
    rnn = torch.nn.RNN(input_size=2, hidden_size=5, num_layers=1)
    x = torch.randn(4, 3, 2)
    w_ih, b_ih, w_hh, b_hh = (p.data for p in (rnn.weight_ih_l0, rnn.bias_ih_l0,
                                               rnn.weight_hh_l0, rnn.bias_hh_l0))

    def forward(keep):
        h = torch.zeros(1, 3, 5)
        output = []
        for t in range(4):
            h[0] = torch.tanh(x[t] @ w_ih.T + b_ih + h[0] @ w_hh.T + b_hh)
            output.append(keep(h[-1]))
        return torch.stack(output)
    expected = forward(torch.clone)
    torch.testing.assert_close(expected, rnn(x)[0])     # the clone() form is nn.RNN
    return forward(lambda v: v), expected


def _train(keep):
    """The program of pytorch#34765, ``keep`` making its best state; the final parameters."""
    torch.manual_seed(0)
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=1.5)
    x, y = torch.randn(8, 2), torch.randn(8, 1)
    best_loss, best_state = float("inf"), None
    for _ in range(6):
        loss = ((model(x) - y) ** 2).mean()
        if loss.item() < best_loss:
            best_loss, best_state = loss.item(), keep(model.state_dict())
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.load_state_dict(best_state)
    return torch.cat([model.weight.detach().flatten(), model.bias.detach()])


@oracle(WRONG, "pytorch#34765 (best state_dict kept by reference)")
def _():
    # kept by reference, the "best" state is the last step's; a deep copy keeps the best one
    return _train(lambda s: s), _train(copy.deepcopy)


for _issue, _f in {
    "pytorch#7484": lambda: (lambda a: a.sub_(a[0]))(torch.Tensor([1, 2, 3, 4, 5])),
    "pytorch#45964": lambda: (lambda g: g[0].index_put_((g[0].flip(0), g[1]), g[0]))(
        torch.meshgrid(torch.arange(8), torch.arange(17), indexing="ij")),
    "pytorch#132031 (cross out= its input)": lambda: (lambda a: torch.cross(
        a, torch.randn(3, 4), dim=0, out=a))(torch.randn(3, 4)),
    "pytorch#906": lambda: (lambda t: t[1:].copy_(t[:-1]))(torch.arange(1., 11.)),
}.items():
    HAZARD[_issue] = _refused(_f)


@oracle(HAZARD, "pytorch#47193 (cumsum out= its input)")
def _():
    x = torch.tensor([1., 2., 3., 4., 5.])
    expected = torch.cumsum(x.clone(), 0)
    return torch.cumsum(x, dim=0, out=x), expected


@oracle(HAZARD, "pytorch#183888 (unfold windows abs_)")
def _():
    z = torch.add(*[torch.linspace(-3, 3, 7).reshape(1, 7)] * 2).unfold(1, 4, 2)
    expected = z.abs()
    return z.abs_(), expected


@oracle(HAZARD, "pytorch#197448 (masked_fill_ of an expanded view)")
def _():
    v = torch.tensor([-1.0, -0.5, 0.0, 0.5]).expand(3, -1)
    expected = v.masked_fill(v >= 0, 2.0)
    return v.masked_fill_(v >= 0, 2.0), expected


@oracle(HAZARD, "pytorch#22118")
def _():
    b = torch.zeros(2).expand(2, 2)
    _refused(lambda: b.mul_(2))()
    mask = torch.tensor([[False, True], [True, False]])
    expected = b.masked_fill(mask, 0)
    return b.masked_fill_(mask, 0), expected


def test_every_case_has_an_oracle_of_its_class():
    for issue, _, expected, _ in CASES:
        severity = expected[0][0]
        if severity in ("wrong", "stale-view"):
            assert issue in WRONG, issue
        elif severity == "hazard":
            assert issue in HAZARD, issue
    assert set(WRONG) | set(HAZARD) <= {c[0] for c in CASES}


@pytest.mark.parametrize("issue", sorted(WRONG))
def test_wrong_ones_really_are_wrong(issue):
    torch.manual_seed(0)
    got, expected = WRONG[issue]()
    assert got.shape == expected.shape and not torch.equal(got, expected), (got, expected)


@pytest.mark.parametrize("issue", sorted(HAZARD))
def test_hazards_are_refused_or_come_out_right_this_time(issue):
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = HAZARD[issue]()
    if result is not None:
        got, expected = result
        torch.testing.assert_close(got, expected)


def test_a_detached_parameter_compared_after_its_step_is_stale(tmp_path):
    """pytorch#34765's mechanism without state_dict(): a detach() taken as "the value before
    the step" reads the stepped values (the step's size comes out 0). One stale view, at the
    line that reads it; its clone() is quiet."""
    code = """
        import torch
        torch.manual_seed(0)
        w = torch.nn.Parameter(torch.randn(3))
        opt = torch.optim.SGD([w], lr=0.1)
        (w ** 2).sum().backward()
        before = w.detach()
        opt.step()
        moved = (w.detach() - before).norm()
        """
    tr, _ = run_case(tmp_path, code)
    (f,) = tr.findings()
    assert (f.severity, f.kind, _line(f), f.names[0]) == ("stale-view", "RAW", 8, "before")
    tr, _ = run_case(tmp_path, code.replace("w.detach()\n", "w.detach().clone()\n", 1),
                     "twin.py")
    assert tr.findings() == [], [f.describe() for f in tr.findings()]
    # the oracle: the step moved w, the detached "before" moved with it
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(3))
    (w ** 2).sum().backward()
    before, kept = w.detach(), w.detach().clone()
    torch.optim.SGD([w], lr=0.1).step()
    assert (w.detach() - before).norm() == 0 and (w.detach() - kept).norm() > 0
