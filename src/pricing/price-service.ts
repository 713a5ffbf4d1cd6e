import { create } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  CreatePriceResponseSchema,
  type CustomPriceSpec,
  DeletePriceResponseSchema,
  GetRepriceResponseSchema,
  ListPricesResponseSchema,
  type PriceService,
  ResolvePriceResponseSchema,
  StartRepriceResponseSchema,
  UpdatePriceResponseSchema,
} from "../../gen/calltrace/v1/price_service_pb.js";
import { describeProblems } from "../ingest/trace-validation.js";
import type { CustomPriceInput, CustomPriceRecord, PriceStore } from "../store/price-store.js";
import { notFound, projectAccess } from "../teams/access.js";
import type { AuditTrail } from "../teams/audit-trail.js";
import { customPriceProblems, maxPricesPerProject, projectCost } from "./custom-prices.js";
import { priceInputOf, priceMessage, repriceJobMessage } from "./price-messages.js";
import { PriceBook } from "./price-match.js";
import type { ProjectPrices } from "./project-prices.js";
import type { RepriceRunner } from "./reprice-job.js";
import { catalogModel } from "./server-prices.js";

export interface PriceServiceDeps {
  prices: PriceStore;
  /** The ingest path's cache, told of every change made here. */
  cache: ProjectPrices;
  reprice: RepriceRunner;
  audit: AuditTrail;
}

/** A spec the store may keep, or INVALID_ARGUMENT naming what is wrong. */
function checkedInput(spec: CustomPriceSpec | undefined): CustomPriceInput {
  if (!spec) throw new ConnectError("spec: is required", Code.InvalidArgument);
  const input = priceInputOf(spec);
  const problems = customPriceProblems(input);
  if (problems.length > 0) throw new ConnectError(describeProblems(problems), Code.InvalidArgument);
  return input;
}

const auditDetails = (p: CustomPriceRecord) => ({ provider: p.provider, match: p.matchKind, pattern: p.pattern });

/** PriceService: a project's custom prices and re-pricing, as the access interceptor allows (viewers read, admins edit). */
export function priceService(deps: PriceServiceDeps): ServiceImpl<typeof PriceService> {
  const { prices } = deps;
  return {
    async listPrices(_request, context) {
      const { project } = projectAccess(context);
      return create(ListPricesResponseSchema, { prices: (await prices.listPrices(project.id)).map(priceMessage) });
    },
    async createPrice(request, context) {
      const access = projectAccess(context);
      const input = checkedInput(request.spec);
      if ((await prices.listPrices(access.project.id)).length >= maxPricesPerProject) {
        throw new ConnectError(`a project keeps at most ${maxPricesPerProject} custom prices`, Code.ResourceExhausted);
      }
      const created = await prices.createPrice(access.project.id, input);
      deps.cache.changed(access.project.id);
      await deps.audit(access, "price.create", created.id, auditDetails(created));
      return create(CreatePriceResponseSchema, { price: priceMessage(created) });
    },
    async updatePrice(request, context) {
      const access = projectAccess(context);
      const updated = await prices.updatePrice(access.project.id, request.priceId, checkedInput(request.spec));
      if (!updated) throw notFound("price", request.priceId);
      deps.cache.changed(access.project.id);
      await deps.audit(access, "price.update", updated.id, auditDetails(updated));
      return create(UpdatePriceResponseSchema, { price: priceMessage(updated) });
    },
    async deletePrice(request, context) {
      const access = projectAccess(context);
      if (!(await prices.deletePrice(access.project.id, request.priceId))) throw notFound("price", request.priceId);
      deps.cache.changed(access.project.id);
      await deps.audit(access, "price.delete", request.priceId);
      return create(DeletePriceResponseSchema);
    },
    async resolvePrice(request, context) {
      const { project } = projectAccess(context);
      // Read afresh: the answer is what the next call will be priced at, not what a cache holds.
      const book = new PriceBook(await prices.listPrices(project.id));
      const at = request.at ? timestampDate(request.at) : new Date();
      const custom = book.find(request.provider, request.model, at);
      const exampleCostUsd = projectCost(book, { provider: request.provider, model: request.model, tokensIn: 1e6, tokensOut: 1e6 }, at);
      return create(ResolvePriceResponseSchema, {
        ...(custom ? { custom: priceMessage(custom) } : { catalogModel: catalogModel(request.provider, request.model) ?? "" }),
        ...(exampleCostUsd === undefined ? {} : { exampleCostUsd }),
      });
    },
    async startReprice(request, context) {
      const access = projectAccess(context);
      const now = Date.now();
      const from = timestampDate(request.from!);
      // Traces received from now on are priced with the current prices already.
      const until = new Date(Math.min(request.until ? timestampDate(request.until).getTime() : now, now));
      if (from.getTime() >= until.getTime()) throw new ConnectError("from: must be before until (and before now)", Code.InvalidArgument);
      const job = await deps.reprice.start(access.project.id, { from, until });
      await deps.audit(access, "price.reprice", job.id, { from: from.toISOString(), until: until.toISOString() });
      return create(StartRepriceResponseSchema, { job: repriceJobMessage(job) });
    },
    async getReprice(request, context) {
      const { project } = projectAccess(context);
      const job = await prices.getRepriceJob(project.id, request.jobId);
      if (!job) throw notFound("re-price job", request.jobId);
      return create(GetRepriceResponseSchema, { job: repriceJobMessage(job) });
    },
  };
}
