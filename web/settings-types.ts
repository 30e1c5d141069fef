// The API's shapes of the project settings pages (variables, schedules, notifications, badges,
// retention), taken from the daemon's zod schemas as types only, like web/types.ts.
import type { z } from "zod";
import type { VariableChangeResource, VariableResource } from "../lib/variables/variables.ts";
import type { NotificationDeliveryResource, NotificationResource } from "../lib/notifications/wire.ts";
import type { ScheduleResource } from "../lib/schedules/wire.ts";
import type { BadgeSettings as BadgeSettingsSchema } from "../handlers/badges/get-settings.ts";
import type { RetentionSettings as RetentionSettingsSchema } from "../handlers/retention/get-settings.ts";

export type Variable = z.infer<typeof VariableResource>;
export type VariableChange = z.infer<typeof VariableChangeResource>;
export type Schedule = z.infer<typeof ScheduleResource>;
export type Notification = z.infer<typeof NotificationResource>;
export type NotificationDelivery = z.infer<typeof NotificationDeliveryResource>;
export type BadgeSettings = z.infer<typeof BadgeSettingsSchema>;
export type RetentionSettings = z.infer<typeof RetentionSettingsSchema>;
