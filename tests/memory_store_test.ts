import { MemoryStore } from "../storage/memory_store.ts";
import { storeContract } from "./store_contract.ts";

storeContract("MemoryStore", () => {
  const store = new MemoryStore();
  return Promise.resolve({
    store,
    cleanup: () => Promise.resolve(store.close()),
  });
}, { durable: false });
