/** DST policies (DESIGN §4) and their defaults; the slot engine implements them (slots.ts). */
export type DstGapPolicy = 'shift' | 'skip';
export type DstOverlapPolicy = 'once' | 'twice';

export const DEFAULT_DST: { readonly gap: 'shift'; readonly overlap: 'once' } = Object.freeze({
  gap: 'shift',
  overlap: 'once',
} as const);
