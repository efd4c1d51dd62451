"""RunPod's GraphQL as it retires, one client at a time (respx): a 410, a 404 of the endpoint or an
answer that says "retired" is remembered for the command (no second call), says what is lost and what to
do, and never carries the key; a GraphQL that lives on without its spot mutations takes spot away only;
a `prefer` create falls back to on-demand over REST v2 once spot is gone."""

from __future__ import annotations

import httpx
import pytest
import respx

from gpujob.providers.base import LaunchRequest
from gpujob.providers.registry import open_providers
from gpujob.providers.runpod.client import GraphQLRetired
from tests.providers.conftest import FAKE_ENV, RP_CANARY, FakeClock
from tests.providers.provider_fakes import RUNPOD, RunPodFake

pytestmark = pytest.mark.anyio
GQL = f"{RUNPOD}/graphql"


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (httpx.Response(410, json={"errors": [{"message": "Gone"}]}), "HTTP 410 Gone"),
        (httpx.Response(404, text="not found"), "HTTP 404 Not Found"),
        (
            httpx.Response(400, json={"errors": [{"message": "This API has been retired."}]}),
            "it says it is retired",
        ),
    ],
)
async def test_a_retired_graphql_is_remembered_and_explained(
    router: respx.Router, clock: FakeClock, answer: httpx.Response, why: str
) -> None:
    route = router.post(GQL).mock(return_value=answer)
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        rp = p["runpod"]
        with pytest.raises(GraphQLRetired) as info:
            await rp.account()
        assert why in str(info.value) and "reading the balance is not possible" in str(info.value)
        hint = info.value.hint or ""
        assert "spot pods" in hint and "balance" in hint and "machine.spot: prefer" in hint
        assert RP_CANARY not in info.value.render()
        with pytest.raises(GraphQLRetired, match="spot bid floor is not possible"):
            await rp.create_machine(LaunchRequest(name="gpujob-x", gpu_id="NVIDIA A40", image="i", spot=True))
        assert route.call_count == 1  # remembered: the second GraphQL need made no call
        assert rp.spot_unavailable() == why


async def test_spot_mutations_removed_takes_spot_away_but_not_the_balance(
    router: respx.Router, clock: FakeClock
) -> None:
    RunPodFake(router)  # v2 as usual

    def graphql(request: httpx.Request) -> httpx.Response:
        query = request.content.decode()
        if "myself" in query:
            return httpx.Response(
                200, json={"data": {"myself": {"clientBalance": 12.5, "currentSpendPerHr": 0}}}
            )
        return httpx.Response(
            200,
            json={"errors": [{"message": 'Cannot query field "podRentInterruptable" on type "Mutation".'}]},
        )

    router.post(GQL).mock(side_effect=graphql)
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        rp = p["runpod"]
        with pytest.raises(GraphQLRetired):
            await rp.create_machine(
                LaunchRequest(name="gpujob-x", gpu_id="NVIDIA A40", image="i", spot=True, bid_per_gpu=0.5)
            )
        assert rp.spot_unavailable() == "its spot mutations are removed"
        account = await rp.account()  # the rest of GraphQL still answers
        assert account is not None and account.balance_usd == 12.5
        pod = await rp.create_machine(
            LaunchRequest(name="gpujob-p", gpu_id="NVIDIA A40", image="i", spot="prefer")
        )
        assert not pod.spot  # prefer: on-demand over REST v2


async def test_a_410_anywhere_never_says_check_the_job_file(router: respx.Router, clock: FakeClock) -> None:
    router.get(f"{RUNPOD}/v2/pods").mock(
        return_value=httpx.Response(410, json={"title": "Gone", "status": 410})
    )
    async with open_providers({"runpod"}, clock=clock, env=FAKE_ENV) as p:
        with pytest.raises(Exception) as info:
            await p["runpod"].client.list_pods()
    hint = getattr(info.value, "hint", "") or ""
    assert "retired this API (410 Gone)" in hint and "job file against its rules" not in hint
