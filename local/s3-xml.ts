import type { S3Refusal } from './s3-auth';

const XML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };

/** Text as an XML element's content or attribute value. */
export const escapeXml = (text: string) => text.replace(/[&<>"']/g, (c) => XML_ESCAPES[c]);

/** An XML element's text with its five predefined entities read back. */
export const unescapeXml = (text: string) =>
  text.replace(/&(amp|lt|gt|quot|apos);/g, (entity) => Object.entries(XML_ESCAPES).find(([, e]) => e === entity)![0]);

/** S3's error document. https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html#RESTErrorResponses */
export const errorXml = (refusal: S3Refusal, resource: string, requestId: string) =>
  [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<Error><Code>${refusal.code}</Code><Message>${escapeXml(refusal.message)}</Message>`,
    ...Object.entries(refusal.extra).map(([name, value]) => `<${name}>${escapeXml(value)}</${name}>`),
    `<Resource>${escapeXml(resource)}</Resource><RequestId>${requestId}</RequestId></Error>`,
  ].join('');
