// The tenant and project every session query carries; ids from a URL never widen it.
export interface SessionScope {
  tenantId: string;
  projectId: string;
}
