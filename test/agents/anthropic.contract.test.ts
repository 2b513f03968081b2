/** The Anthropic adapter against the ModelProvider contract, on the fake Messages API. */
import { anthropicProviderFixture } from "../fakes/anthropic-fixture.js";
import { modelProviderContract } from "./provider.contract.js";

modelProviderContract("Anthropic", anthropicProviderFixture);
