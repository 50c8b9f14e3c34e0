/** The fenced writes a handler asks for (the handler API's `ctx.fenced`, shared/handler-api.ts): rules in core may build them. */

/** A DynamoDB condition or update fragment with its placeholders. */
export interface Expression {
  readonly expression: string;
  readonly names?: Readonly<Record<string, string>>;
  readonly values?: Readonly<Record<string, unknown>>;
}

export interface FencedPut {
  readonly kind: 'put';
  readonly table: string;
  readonly item: Readonly<Record<string, unknown>> & { readonly pk: string; readonly sk: string };
  /** An extra business condition, joined with the fence condition by AND. */
  readonly condition?: Expression;
}
export interface FencedUpdate {
  readonly kind: 'update';
  readonly table: string;
  readonly key: { readonly pk: string; readonly sk: string };
  /** SET clauses without the `SET` keyword, e.g. `#status = :settled`; the fence is added. */
  readonly set: Expression;
  readonly condition?: Expression;
}
export type FencedWrite = FencedPut | FencedUpdate;
