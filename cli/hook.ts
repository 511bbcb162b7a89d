export function hookMain(_argv: string[]): Promise<number> {
  return Promise.resolve(1);
}
