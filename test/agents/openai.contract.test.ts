/** The OpenAI-compatible adapter against the ModelProvider contract, on the fake Chat Completions API. */
import { openAiProviderFixture } from "../fakes/openai-fixture.js";
import { modelProviderContract } from "./provider.contract.js";

modelProviderContract("OpenAI-compatible", openAiProviderFixture, {
  optOuts: {
    usage:
      "the Chat Completions API reports no cache writes (it caches by itself); cache reads are tested in test/agents/openai.test.ts",
  },
});
