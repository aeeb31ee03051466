"""PyTorch's CUDA sanitizer scenarios (``test/test_cuda_sanitizer.py``, ``TestEventHandler``)
on aliasflow's stream clocks and race search, each checked against PyTorch's own sanitizer
state machine run on the same events; then the cases the sanitizer cannot see."""
import pytest

from csan_scenarios import AF_ONLY_SCENARIOS, CSAN_SCENARIOS, CsanDriver, PureDriver


@pytest.mark.parametrize("scenario", CSAN_SCENARIOS, ids=lambda s: s.__name__)
def test_csan_scenario_same_verdicts(scenario):
    pytest.importorskip("torch")
    scenario(CsanDriver())   # the port is faithful: CSAN itself gives the verdicts asserted
    scenario(PureDriver())   # and aliasflow gives the same


@pytest.mark.parametrize("scenario", AF_ONLY_SCENARIOS, ids=lambda s: s.__name__)
def test_beyond_csan(scenario):
    pytest.importorskip("torch")
    scenario(CsanDriver())   # what the sanitizer says (csan= where it differs)
    scenario(PureDriver())


def test_a_port_that_lied_would_fail():
    """The drivers are not vacuous: a wrong verdict is caught on both sides."""
    pytest.importorskip("torch")
    from csan_scenarios import stream_id, tensor_id
    for driver in (CsanDriver(), PureDriver()):
        driver.good(stream_id(1), read_write=[tensor_id(1)])
        with pytest.raises(AssertionError):
            driver.good(stream_id(2), read_only=[tensor_id(1)])
