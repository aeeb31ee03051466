"""PyTorch programs that run without error and give the wrong answer; run with

    aliasflow trace examples/trace_silent_wrong.py
    aliasflow trace --html report.html examples/trace_silent_wrong.py
"""
import torch

a = torch.arange(1., 13.).reshape(3, 4)
a -= a[:, :1]                      # column 0 becomes 0 first: later columns subtract 0

b = torch.arange(1., 21.).reshape(4, 5)
b[:, 1:] /= b[:, :-1]              # reads elements it has already divided

big = torch.arange(25.).reshape(5, 5)
c = big[1:4, 1:4]
c += c.t()                         # not symmetric afterwards

buffer = torch.arange(60.).reshape(3, 4, 5)
buffer[:, 1:] = buffer[:, :-1]     # a shift that smears row 0 down

x = torch.arange(6.)
try:
    torch.add(x[1:], x[:-1], out=x[:-1])   # PyTorch refuses this one
except RuntimeError as exc:
    print("refused:", str(exc).split(".")[0])

u = torch.zeros(10)
u.unfold(0, 4, 2).add_(1)          # overlapping windows: elements 2..7 written twice
print(u)
