// The workflow bundle's entry: every workflow type the worker registers.
export { probeWorkflow } from './probe';
