export function bootstrapMain(_argv: string[]): Promise<number> {
  return Promise.resolve(1);
}
