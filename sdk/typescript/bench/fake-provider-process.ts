// The tests' fake provider in a process of its own, so that answering calls
// costs the benchmarked process nothing. Reports its URL over IPC.
import { FakeProvider } from "../test/support/fake-provider.js";

const provider = await FakeProvider.start();
process.send?.({ url: provider.url });
process.on("disconnect", () => process.exit(0));
